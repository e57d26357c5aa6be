"""The file siiRL's ``AgentArguments.env_path`` names: ``"<this file>:GymwireTextEnv"``.

siiRL loads an ``env_path`` file with ``importlib.util.spec_from_file_location`` under a made-up
module name, outside any package, so the file may use absolute imports only; this one re-exports
:class:`gymwire.integrations.siirl.GymwireTextEnv`. ``python -m gymwire.integrations.siirl_env``
prints the ``env_path`` entry for this installation.
"""

from gymwire.integrations.siirl import GymwireTextEnv

__all__ = ["GymwireTextEnv", "ENV_PATH"]

ENV_PATH = f"{__file__}:GymwireTextEnv"

if __name__ == "__main__":
    print(ENV_PATH)

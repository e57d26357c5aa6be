"""The framework integrations read a gymwire robosuite task's observation as their LIBERO paths do.

RLinf's and siiRL's embodied configs point at a gymwire env through ``env_type: gymwire`` and
``gymwire: {url, env_id, kwargs, image_key, wrist_key, ...}`` (docs/integrations.md); the
integrations find the image, state and instruction through ObsMapper. This checks that mapping on
the robosuite family's observation space, with no simulator (the space is built without importing
robosuite), so it runs in the default test venv: agent-view image as the main image, the wrist
camera, LIBERO's 8-dim state and the instruction. The frameworks' own env workers against a served
robosuite task run in the framework suites (tests/frameworks/rlinf_suite.py and siirl_suite.py,
in their venvs, serving robosuite from scripts/test-sim.sh's venv).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces as gs

from gymwire.integrations._common import ObsMapper
from gymwire.sim.robosuite_tasks import libero_observation_space, quat_to_axis_angle

# The config docs/envs/robosuite.md gives for RLinf's env.train.gymwire and siiRL's env config.
CONFIG = {"image_key": "agentview_image", "wrist_key": "robot0_eye_in_hand_image"}


def test_mapper_finds_libero_leaves_of_the_robosuite_space() -> None:
    space = libero_observation_space(224)
    mapper = ObsMapper(space, **CONFIG)
    assert (mapper.image_key, mapper.wrist_key, mapper.state_key, mapper.task_key) == (
        "agentview_image",
        "robot0_eye_in_hand_image",
        "state",
        "task_description",
    )
    obs = space.sample()
    obs["task_description"] = "pick up the red cube"
    assert mapper.image(obs).shape == (224, 224, 3) and mapper.wrist(obs).shape == (224, 224, 3)
    assert mapper.state(obs).shape == (8,) and mapper.state(obs).dtype == np.float32
    assert mapper.task(obs) == "pick up the red cube"
    assert isinstance(space["task_description"], gs.Text) and space["task_description"].contains("pick up the red cube")


def test_axis_angle_matches_robosuite() -> None:
    # A quarter turn about z, (x, y, z, w) as robosuite orders quaternions: axis-angle (0, 0, pi/2).
    quat = np.array([0.0, 0.0, np.sin(np.pi / 4), np.cos(np.pi / 4)])
    np.testing.assert_allclose(quat_to_axis_angle(quat), [0.0, 0.0, np.pi / 2], atol=1e-12)
    np.testing.assert_array_equal(quat_to_axis_angle(np.array([0.0, 0.0, 0.0, 1.0])), np.zeros(3))

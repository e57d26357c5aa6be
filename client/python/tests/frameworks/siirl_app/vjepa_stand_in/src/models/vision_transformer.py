"""Stand-in: siiRL imports ``vit_giant_xformers_rope`` by name; the suite never builds the model."""


def vit_giant_xformers_rope(*args, **kwargs):
    raise RuntimeError("V-JEPA is not installed: this is the suite's stand-in for its package layout")

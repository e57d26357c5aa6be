"""An agent process file in the shape of siiRL's marft example: the prompt wrapped in a template before
generation, the reply appended after a per-agent marker (siiRL decodes the result and hands it to the env)."""

from string import Template


def pre_process(tokenizer, prompt_id, obs, **kwargs):
    text = Template(kwargs.get("pre_chat_template", "${prompt}")).substitute(prompt=tokenizer.decode(prompt_id))
    return tokenizer.encode(text)


def post_process(tokenizer, prompt_id, response_id, **kwargs):
    return prompt_id + tokenizer.encode(kwargs.get("post_chat_template", "")) + response_id

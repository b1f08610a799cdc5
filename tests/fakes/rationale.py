"""A chat backend standing in for the Space's rationale writer (the embedded SmolLM2)."""

from vilbias.models.chat import ChatResult


class StubRationale:
    """A chat backend standing in for SmolLM2 (its load takes ~30-90 s on 2 cores): answers
    every request with ``answer(prompt_text)`` and records the prompts."""

    def __init__(self, answer=None):
        self.prompts = []
        self.answer = answer or (lambda prompt: "The flagged sentences use loaded words.")

    def chat(self, requests, on_result=None):
        out = []
        for r in requests:
            self.prompts.append(r.messages)
            out.append(ChatResult(self.answer(r.messages[-1]["content"])))
        return out

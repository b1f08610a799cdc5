"""A model kind declared outside vilbias, as a user adds one: one module, a backend and its kind."""

from __future__ import annotations

from tests.annotate.conftest import answer, prompt_of
from vilbias.models.chat import ChatResult
from vilbias.models.kinds import ModelKind, register_kind


class EchoBackend:
    """Answers every request ``biased``: the task's JSON to a schema-bound annotation call, the
    closed question's ``Label: …`` otherwise."""

    def __init__(self, model: str):
        self.model = model
        self.requests = []

    def chat(self, requests, on_result=None):
        out = []
        for index, request in enumerate(requests):
            self.requests.append(request)
            if "response_format" in request.params or "Rationale" in str(request.messages[0].get("content", "")):
                samples = [ChatResult(answer("biased", prompt=prompt_of(request)))] * request.n
                result = ChatResult.of_samples(samples)
            else:
                result = ChatResult("Label: biased\nReasoning: the echo kind always says so.")
            if on_result is None:
                out.append(result)
            else:
                on_result(index, result)
        return out


@register_kind
class EchoKind(ModelKind):
    name = "echo"
    prefix = "echo:"
    backends: list[EchoBackend] = []

    @classmethod
    def chat_backend(cls, spec) -> EchoBackend:
        cls.backends.append(EchoBackend(spec.model))
        return cls.backends[-1]

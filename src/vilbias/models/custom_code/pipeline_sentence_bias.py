"""The sentence-bias model's pipeline: an article's text in, the model's answer out::

    from transformers import pipeline
    detector = pipeline("text-classification", model="training/default_model", trust_remote_code=True)
    detector("Officials unveil the plan. Critics slammed the reckless scheme.")
    # {"label": "biased", "score": ..., "probability": ..., "statistic": ..., "rule": {...},
    #  "sentences": [{"text": ..., "probability": ..., "words": [...], "windows": 1, "flagged": ...}, ...]}

A checkpoint's ``config.json`` names it for the Hub's ``text-classification`` task
(``custom_pipelines``); vilbias registers it as ``media-bias`` (``vilbias.models.pipelines``).
Kept apart from the model's module because it imports transformers' pipelines, which import the
Auto classes: the model's module must not (see the note there).
"""

from __future__ import annotations

from transformers.pipelines.base import Pipeline


class MediaBiasPipeline(Pipeline):
    """An article's text in, ``SentenceBiasModel.score_article``'s answer out, as plain data
    (``ArticleScore.to_dict``: ``label`` and ``score`` first, as text-classification pipelines
    answer, then the probability that the article is biased, the rule's statistic and the rule,
    and every sentence with its probability, ``flagged``, ``windows`` and marked ``words``). A list
    of texts is a list of articles. The model splits each text into sentences and tokenizes them
    itself, with its own tokenizer (the one saved beside its weights), so the pipeline loads
    none."""

    _load_tokenizer = False
    _load_feature_extractor = False
    _load_image_processor = False
    _load_video_processor = False
    _load_processor = False

    def _sanitize_parameters(self, **kwargs):
        return {}, {}, {}

    def preprocess(self, inputs) -> dict:
        if not isinstance(inputs, str):
            raise TypeError(f"the {self.task} pipeline takes an article's text (a str, or a list of them), not {type(inputs).__name__}")
        return {"article": inputs}

    def _forward(self, model_inputs: dict) -> dict:
        return {"article": self.model.score_article(model_inputs["article"])}

    def postprocess(self, model_outputs: dict) -> dict:
        return model_outputs["article"].to_dict()

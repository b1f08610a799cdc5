"""A classifier baseline's model card: what :func:`card_info` gives ``vilbias publish model`` and
the card renderer (the prose is in ``vilbias/publish/templates/classifier/``), computed from the run's
config, metrics and provenance."""

from __future__ import annotations

from vilbias.training.classifier_config import ClassifierConfig

from vilbias.provenance import TrainingData
from vilbias.publish.model import ModelCardInfo, render_section


def card_info(cfg: ClassifierConfig, config_name: str, metrics: dict, model, training_data: TrainingData):
    """The model card contents (:class:`vilbias.publish.model.ModelCardInfo`) for one run."""
    fusion = cfg.architecture == "fusion"
    method = f"classifier-fusion-{cfg.modality}" if fusion else "classifier-full"
    hyper = {k: metrics["settings"][k] for k in (
        "recipe", "per_device_train_batch_size", "num_train_epochs", "learning_rate", "lr_scheduler_type", "warmup_steps",
        "weight_decay", "patience", "metric_for_best_model", "loss", "class_weighting", "seed")}
    hyper["max_length"] = metrics["max_length"]
    if cfg.loss == "focal":
        hyper.update(focal_alpha=cfg.focal_alpha, focal_gamma=cfg.focal_gamma)
    if cfg.ensemble_seeds:
        hyper["ensemble_seeds"] = cfg.ensemble_seeds
    test = metrics["test"]
    return ModelCardInfo(
        base_model=cfg.model,
        dataset=cfg.dataset,
        dataset_config=config_name,
        dataset_revision=cfg.dataset_revision,
        method=method,
        task="text-classification",
        hyperparameters=hyper,
        trainable_params=sum(p.numel() for p in model.parameters() if p.requires_grad),
        total_params=sum(p.numel() for p in model.parameters()),
        wall_time_s=metrics["train_runtime_s"],
        eval_results=[
            {"metric_type": name, "metric_name": f"{name} ({avg})", "value": test[f"{name}_{avg}"], "split": "test"}
            for avg in ("binary", "macro")
            for name in ("f1", "precision", "recall")
        ]
        + [{"metric_type": "accuracy", "value": test["accuracy"], "split": "test"}],
        usage_snippet=usage_snippet(cfg) if fusion else "",
        library_name="transformers",
        summary=card_summary(cfg, training_data),
        training_data=training_data,
        tags=["media-bias", "vilbias"] + (["multimodal", "fusion"] if fusion else []),
    )


def card_summary(cfg: ClassifierConfig, training_data: TrainingData) -> str:
    """``templates/classifier/summary.md`` for this run."""
    encoders = [e for e, used in ((cfg.model, "text" in cfg.modality), (cfg.image_encoder, "image" in cfg.modality)) if used]
    return render_section(
        "classifier/summary.md", fusion=cfg.architecture == "fusion", model=cfg.model, modality=cfg.modality, encoders=encoders,
        freeze_text_encoder=cfg.freeze_text_encoder, freeze_image_encoder=cfg.freeze_image_encoder,
        validation_rows=training_data.extra["validation_rows"], fraction=training_data.extra.get("fraction", 1.0),
        distant=training_data.extra.get("distant"),
    )


def usage_snippet(cfg: ClassifierConfig) -> str:
    """``templates/classifier/usage_fusion.py.jinja``: load the fusion model and label one item."""
    return render_section("classifier/usage_fusion.py.jinja", repo_id=cfg.hub_model_id or cfg.output_dir)

"""The engine's pieces the sentence model trains with: the warm-up schedule and BestEpoch."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from transformers import TrainerControl, TrainerState, TrainingArguments  # noqa: E402
from vilbias.training.engine import BestEpoch, warmup_schedule  # noqa: E402


@pytest.mark.parametrize("kind", ["linear", "cosine", "constant"])
def test_warmup_starts_learning_at_the_first_step_and_decays(kind):
    w = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([w], lr=1.0)
    sched = warmup_schedule(opt, kind, 0.1, 100)
    rates = []
    for _ in range(100):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert rates[0] == pytest.approx(0.1) and rates[9] == pytest.approx(1.0)  # 10 warm-up steps from 1/10
    if kind == "constant":
        assert rates[-1] == 1.0
    else:
        assert rates[-1] < 0.05 and all(a >= b for a, b in zip(rates[10:], rates[11:], strict=False))


def test_best_epoch_stops_after_patience_and_restores_the_best(tmp_path):
    weights = {"w": 0}
    loaded = []
    cb = BestEpoch(2, lambda: dict(weights), loaded.append)
    args, state, control = TrainingArguments(output_dir=str(tmp_path), report_to="none"), TrainerState(), TrainerControl()
    for epoch, loss in enumerate([0.7, 0.5, 0.6, 0.55], start=1):
        weights["w"] = epoch
        cb.on_evaluate(args, state, control, metrics={"eval_loss": loss})
        assert control.should_training_stop == (epoch == 4)
    cb.on_train_end(args, state, control)
    assert loaded == [{"w": 2}] and cb.best == 0.5


def test_best_epoch_without_patience_never_stops(tmp_path):
    cb = BestEpoch(0, dict, lambda s: None)
    args, state, control = TrainingArguments(output_dir=str(tmp_path), report_to="none"), TrainerState(), TrainerControl()
    for loss in (0.1, 0.2, 0.3, 0.4):
        cb.on_evaluate(args, state, control, metrics={"eval_loss": loss})
    assert not control.should_training_stop

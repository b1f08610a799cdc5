"""Training: classifier baselines, trl sft recipes and accelerate configs."""

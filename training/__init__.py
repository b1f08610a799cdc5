"""Training: classifier baselines, trl sft recipes and accelerate configs (DESIGN §2)."""

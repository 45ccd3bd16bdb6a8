"""rlab-mle: MLE-bench-compatible Kaggle competitions with framework-held validation."""

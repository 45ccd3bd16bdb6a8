"""rlab's MLflow observer: mirrors a run's journal into an MLflow tracking server."""

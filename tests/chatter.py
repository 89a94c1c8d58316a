"""What a command's log must not hold outside a terminal: redrawn bars and third-party chatter (ir.logs)."""

CHATTER = (
    "Creating initial MLflow database tables",  # mlflow.store.db.utils INFO
    "Updating database tables",
    "INFO mlflow",  # any MLflow INFO line ("Validating input example against model signature")
    "Successfully registered model",  # mlflow.register_model's prints
    "Created version",
    "already exists. Creating a new version",
    "not found. Creating it",  # Lightning's MLFlowLogger creating the experiment
    "LeafSpec",  # torch's FutureWarning for Lightning's _pytree
    "GPU available:",  # Lightning's banners
    "Trainer.fit` stopped",
    "Started a local Ray instance",  # Ray's driver INFO
    "has not been scheduled",  # Halide's warning for an unscheduled update definition
)


def assert_clean_log(text: str, longest: int = 300) -> list[str]:
    """No carriage return, no line longer than `longest`, none of CHATTER; returns the lines."""
    assert "\r" not in text, repr(text[:2000])
    lines = text.splitlines()
    assert max(map(len, lines), default=0) <= longest, max(lines, key=len)
    found = [c for c in CHATTER if c in text]
    assert not found, (found, text[-3000:])
    return lines

"""What runs and where: run specs and experiments, one run executed, the resumable runner, executors."""

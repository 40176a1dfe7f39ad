"""A training run: the one loop, its config and overrides, the run folder, checkpoints, optimizer, memory check, distributed setup, the lock, trackers and init-from."""

"""The speed suite: training-step times, their floors and the peers' times, kernels, scaling and precision."""

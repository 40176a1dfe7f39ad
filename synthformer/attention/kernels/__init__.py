"""How a call is computed: the routes, the blocked kernels and the ATen wrappers."""

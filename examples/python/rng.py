"""Random numbers: global seeds, private generators, saved states, forked RNG.
Genesis generators are Philox (seed, offset): the same seed gives the same numbers on every
backend, CPU and CUDA.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/rng.py
"""
import genesis

genesis.manual_seed(42)  # every device's default generator
x = genesis.rand(100, 100, device=genesis.device("cuda" if genesis.cuda.is_available() else "cpu"))
y = genesis.randn(50, 50, device=genesis.device("cpu"))

generator = genesis.Generator()  # a private stream
generator.manual_seed(12345)
z = genesis.randn(3, generator=generator)

state = genesis.get_rng_state()  # save ...
a = genesis.rand(3)
genesis.set_rng_state(state)  # ... and restore
b = genesis.rand(3)
assert a.tolist() == b.tolist()

with genesis.fork_rng():  # random ops in here leave the global state alone
    genesis.manual_seed(999)
    genesis.rand(10)
c = genesis.rand(3)
genesis.set_rng_state(state)
genesis.rand(3)
assert genesis.rand(3).tolist() == c.tolist()
print("rng: restored states reproduce the same numbers;", "state", genesis.get_rng_state())

"""What the tests and the benches share, none of it a test: servers (llama.cpp, a scripted
OpenAI-compatible one, a fault-injecting proxy, S3), a SLURM cluster, converted models, the tiny
config's workflow builds, config overlays, τ² episodes and trajectories, the BFCL published-run
fixture, the shipped published runs' sha256 check (`shipped`) and the kernel probe. `bench/`
imports them from here, never from a test module."""

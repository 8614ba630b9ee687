"""MDLM-style masked diffusion models and autoregressive baselines (torch), measured against the oracle."""

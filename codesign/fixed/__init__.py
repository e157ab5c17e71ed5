"""Fixed-point arithmetic with the exact semantics of ap_fixed / ap_ufixed."""

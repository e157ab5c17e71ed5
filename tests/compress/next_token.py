"""Token windows and an independent next-token KL, for the tests of the methods that score a causal LM."""

import torch

from codesign.llm import swapped


def windows(count=8, seed=1, vocab=128, length=24):
    """count random token windows."""
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (length,), generator=generator) for _ in range(count)]


def mean_kl(model, replacements, data):
    """Mean next-token KL(original ‖ replaced) over the windows, computed from the model's own logits."""
    total = 0.0
    with torch.no_grad():
        for window in data:
            teacher = model(input_ids=window[None]).logits[0, :-1].log_softmax(-1)
            with swapped(model, replacements):
                student = model(input_ids=window[None]).logits[0, :-1].log_softmax(-1)
            total += float((teacher.exp() * (teacher - student)).sum(-1).mean())
    return total / len(data)

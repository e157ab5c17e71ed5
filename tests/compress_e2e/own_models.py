"""A user's own transformers model folder: a tiny model built from a config, saved with a real tokenizer (MiniLM's)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch

# kind -> (config class, model class, the config's sizes); every kind takes MiniLM's vocabulary
_KINDS = {
    "opt": ("OPTConfig", "OPTForCausalLM", {"hidden_size": 32, "ffn_dim": 64, "num_hidden_layers": 2,
                                            "num_attention_heads": 4, "word_embed_proj_dim": 32}),
    "llama": ("LlamaConfig", "LlamaForCausalLM", {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                                  "num_attention_heads": 4, "num_key_value_heads": 2}),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 32, "n_layer": 2, "n_head": 4, "bos_token_id": 101,
                                               "eos_token_id": 102}),
    "bert": ("BertConfig", "BertModel", {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                         "num_attention_heads": 4}),
    "bert-mlm": ("BertConfig", "BertForMaskedLM", {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                                   "num_attention_heads": 4}),
}


def user_tokenizer(minilm):
    """MiniLM's tokenizer with a BOS token (the token stream separates articles with it)."""
    tokenizer = copy.deepcopy(minilm[1])
    tokenizer.bos_token = "[CLS]"
    return tokenizer


def user_folder(folder: Path, kind: str, tokenizer, seed: int = 0, **config) -> Path:
    """save_pretrained of a tiny random `kind` model (config overrides: e.g. max_position_embeddings) and the tokenizer."""
    import transformers

    config_class, model_class, sizes = _KINDS[kind]
    torch.manual_seed(seed)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(
        vocab_size=len(tokenizer), **{**sizes, **config}))
    bars = transformers.utils.logging.is_progress_bar_enabled()
    transformers.utils.logging.disable_progress_bar()  # the tests read what codesign writes on stderr
    try:
        model.save_pretrained(folder)
    finally:
        if bars:
            transformers.utils.logging.enable_progress_bar()
    tokenizer.save_pretrained(folder)
    return folder

#!/usr/bin/env python3
"""Write the tiny Llama that otelbench's vLLM tests serve with ``--load-format dummy``.

No weights are downloaded or written: vLLM fills the parameters with random values. What this
writes is everything else a Hugging Face model directory needs:

- ``config.json``: LlamaForCausalLM, hidden 256, intermediate 512, 2 layers, 4 heads / 2 KV
  heads, head_dim 64 (one of the sizes vLLM's CPU attention accepts), vocab 1024, max position
  2048, ``torch_dtype`` float32 (bfloat16 selects the AMX attention kernel, which can die with
  SIGILL on this machine; see shared/research/vllm-cpu-feasibility.md, addendum);
- ``tokenizer.json``: a ByteLevel BPE trained with ``tokenizers`` on the small English corpus
  below, exactly 1024 entries including ``<s>`` (0), ``</s>`` (1) and ``<unk>`` (2), over an
  alphabet of printable ASCII, tab and newline;
- ``tokenizer_config.json`` (PreTrainedTokenizerFast, with a chat template so
  ``/v1/chat/completions`` works), ``special_tokens_map.json``, ``generation_config.json``.

**Every token id decodes to non-empty text on its own**, so with vLLM each generated token is
content (a streamed delta is never empty): no lone bytes >= 0x80 (not UTF-8 alone; vLLM holds
them back) and no token marked special (vLLM skips those). With random weights and greedy
decoding a model can repeat one token for the whole answer; with the full byte alphabet and
special ``<s>``/``</s>``, 3 of 120 random requests streamed no content at all. ``</s>`` still
ends generation (``eos_token_id`` 1 in config.json and generation_config.json) unless the
request sets ``ignore_eos``; an input byte outside that alphabet encodes as ``<unk>``.

The output is deterministic: the same bytes on every run, so a file only changes when this
script changes. Files whose content is already right are not rewritten.

Usage::

    python scripts/vllm/make_tiny_model.py [DIR]

``DIR`` defaults to ``${OTELBENCH_HOME:-~/.cache/otelbench}/tiny-llama``.

Needs ``tokenizers`` (present in both the vLLM venv and otelbench's dev env).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

VOCAB_SIZE = 1024
BOS, EOS, UNK = "<s>", "</s>", "<unk>"
SPECIAL_TOKENS = [BOS, EOS, UNK]  # ids 0, 1, 2

CHAT_TEMPLATE = (
    "<s>"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}"
)

# A few paragraphs of plain English, enough for 765 BPE merges on top of the 256 byte symbols.
CORPUS = """\
The quick brown fox jumps over the lazy dog while the farmer watches from the old wooden fence.
A language model reads a prompt, one token at a time, and then writes an answer token by token.
Benchmarking a serving system means sending many requests and measuring how long each one takes.
The time to first token is the delay between sending a request and seeing the first word appear.
Inter token latency is the gap between two consecutive tokens in the same streamed response.
Throughput counts how many output tokens the whole server produces in one second of wall time.
When the queue grows faster than the engine can drain it, waiting time climbs without a limit.
A scheduler decides which requests run in the next step and which ones must wait their turn.
Memory for the key and value cache is divided into blocks, and each block holds a few tokens.
If the cache is full, the engine may preempt a request and recompute it later from the start.
OpenTelemetry describes traces, spans, events and metrics in a way every vendor can understand.
A span has a name, a start time, an end time, attributes, and a parent that links it to a trace.
The collector receives spans over the network, batches them, and writes them to a database.
Good measurements are repeatable: the same workload, the same seed, and the same machine setup.
Every morning the baker opens the shop, lights the oven, and sells warm bread to the neighbours.
In the spring the river rises, the fields turn green, and children play along the muddy banks.
She walked to the station, bought a ticket, and waited for the train that was running late.
The library keeps thousands of books about history, science, music, travel, and cooking.
He wrote a short letter to his grandmother, folded it twice, and posted it on the way home.
Clouds gathered over the hills, thunder rolled across the valley, and the rain began to fall.
A good engineer measures first, changes one thing at a time, and writes down what happened.
The committee met on Tuesday to discuss the budget, the schedule, and the new office building.
Our team tested the system under light load, heavy load, and sudden bursts of many requests.
The report includes tables, plots, and a short summary that explains what each number means.
Numbers without context can mislead, so every result should name its workload and its setup.
Please answer the question briefly and clearly, using simple words and complete sentences.
What is the capital of France? Paris is the capital of France and its largest city.
How many days are there in a week? There are seven days in a week, from Monday to Sunday.
Why is the sky blue? Sunlight scatters in the air, and blue light scatters the most.
Tell me a story about a small robot who learned to paint pictures of the sea at night.
Once upon a time there was a kingdom by the mountains where everyone loved to sing songs.
The cat slept on the warm windowsill while the dog chased leaves across the garden path.
Fresh vegetables, ripe fruit, cheese, and bread filled the baskets at the weekend market.
The museum opened a new exhibition about ancient ships, maps, and the stars sailors followed.
Students practised their lessons, asked questions, and shared their notes with one another.
The weather today is mild and sunny, with a gentle wind from the west and no rain expected.
Doctors recommend regular exercise, plenty of water, fresh food, and a good night of sleep.
The orchestra tuned their instruments, the lights dimmed, and the concert finally began.
Engineers built a bridge of steel and concrete that carries trains and cars over the river.
A careful reader checks the sources, compares the claims, and thinks before drawing conclusions.
"""


def _train_tokenizer() -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    # Byte-level symbols of printable ASCII, tab and newline only (see the module docstring).
    ascii_bytes = "\t\n" + "".join(chr(b) for b in range(0x20, 0x7F))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    alphabet = sorted({c for piece, _ in byte_level.pre_tokenize_str(ascii_bytes) for c in piece})
    assert len(alphabet) == len(ascii_bytes)

    tok = Tokenizer(models.BPE(unk_token=UNK))  # other bytes encode as <unk>
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        min_frequency=1,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=alphabet,
        limit_alphabet=len(alphabet),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines(), trainer=trainer, length=None)
    if tok.get_vocab_size() != VOCAB_SIZE:
        raise SystemExit(
            f"tokenizer has {tok.get_vocab_size()} entries, want {VOCAB_SIZE}: extend CORPUS"
        )
    for i, special in enumerate(SPECIAL_TOKENS):
        if tok.token_to_id(special) != i:
            raise SystemExit(f"special token {special!r} is not id {i}")
    return tok


def _json(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def model_files() -> dict[str, str]:
    """Every file of the tiny model directory, by name, as text."""
    config = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "head_dim": 64,
        "hidden_act": "silu",
        "hidden_size": 256,
        "initializer_range": 0.02,
        "intermediate_size": 512,
        "max_position_embeddings": 2048,
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "pretraining_tp": 1,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": "float32",
        "use_cache": True,
        "vocab_size": VOCAB_SIZE,
    }
    # No bos/eos/unk/pad in the tokenizer's special-token map, on purpose: transformers marks
    # those special, and vLLM's detokenizer skips special tokens, so a random model generating
    # one would stream an empty delta (seen: <s> was the commonest "empty" token). Left plain,
    # every one of the 1024 ids decodes to non-empty text on its own. The model still stops at
    # </s> (id 1) through config.json / generation_config.json, unless ``ignore_eos`` is set.
    tokenizer_config = {
        "add_bos_token": False,
        "add_eos_token": False,
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    special_tokens_map: dict[str, str] = {}
    generation_config = {"bos_token_id": 0, "eos_token_id": 1, "do_sample": False}
    tokenizer = json.loads(_train_tokenizer().to_str())
    for added in tokenizer["added_tokens"]:
        added["special"] = False
    tokenizer_json = json.dumps(tokenizer, indent=2, ensure_ascii=False)
    return {
        "config.json": _json(config),
        "generation_config.json": _json(generation_config),
        "special_tokens_map.json": _json(special_tokens_map),
        "tokenizer.json": tokenizer_json + "\n",
        "tokenizer_config.json": _json(tokenizer_config),
    }


def default_dir() -> Path:
    home = os.environ.get("OTELBENCH_HOME") or str(Path.home() / ".cache" / "otelbench")
    return Path(home) / "tiny-llama"


def write(directory: Path) -> list[str]:
    """Write the model into ``directory``; return the names of files that changed."""
    directory.mkdir(parents=True, exist_ok=True)
    changed = []
    for name, text in model_files().items():
        path = directory / name
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        changed.append(name)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=default_dir())
    args = parser.parse_args(argv)
    changed = write(args.dir)
    what = ", ".join(changed) if changed else "nothing changed"
    print(f"tiny model in {args.dir} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

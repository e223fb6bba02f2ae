"""Tokenizers (draft 4.4): native from tokenizer.json and from a real /tokenize server, and
Option B's cl100k_base offline."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from tokenizers import Tokenizer as HF
from tokenizers import decoders, models, pre_tokenizers, processors, trainers

from otelbench.errors import ConfigError, StreamError, TargetHTTPError, TargetUnreachable
from otelbench.loadgen.tokenizers import (
    TOKENIZERS,
    HFTokenizer,
    ServerTokenizer,
    TiktokenTokenizer,
    load_tokenizer,
    make_tokenizer,
    verify_roundtrip,
)
from otelbench.loadgen.workloads import make_workload
from otelbench.sut.vllm_cpu import default_model_dir

CORPUS = [
    "hello world how are you today",
    "i am fine thank you and how are you",
    "tell me about the world, the world is big and round",
    "def main():\n    return 42\n",
] * 20


def build_tiny_tokenizer(directory: Path) -> Path:
    """A real byte-level BPE tokenizer.json with BOS ``<s>`` = 0 and EOS ``</s>`` = 1."""
    tok = HF(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer)
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(
        json.dumps({"bos_token": "<s>", "eos_token": "</s>"}), encoding="utf-8"
    )
    return directory


@pytest.fixture
def tiny_dir(tmp_path: Path) -> Path:
    return build_tiny_tokenizer(tmp_path / "tiny")


@pytest.fixture
def tiny_tokenizer(tiny_dir: Path) -> HFTokenizer:
    return HFTokenizer(str(tiny_dir))


def test_hf_tokenizer_round_trips_and_declares(tiny_tokenizer: HFTokenizer, tiny_dir: Path) -> None:
    ids = tiny_tokenizer.encode("hello world how are you")
    assert ids
    assert 0 not in ids  # no BOS unless asked
    assert tiny_tokenizer.decode(ids) == "hello world how are you"
    with_bos = tiny_tokenizer.encode("hello world how are you", add_special_tokens=True)
    assert with_bos == [0, *ids]
    assert tiny_tokenizer.bos_token_id == 0
    assert tiny_tokenizer.eos_token_id == 1
    assert tiny_tokenizer.vocab_size == 300
    d = tiny_tokenizer.describe()
    assert d["option"] == "A (native)"
    assert d["vocab_size"] == 300
    assert d["source"] == str(tiny_dir / "tokenizer.json")
    assert d["bos_eos"] == "excluded from counts"
    assert d["system_prompt"] == "counted separately"
    assert d["name"] == "tiny"


def test_the_tiny_llama_tokenizer() -> None:
    """The served tiny model's own tokenizer (scripts/setup.sh writes it; CI runs setup)."""
    model_dir = default_model_dir()
    assert (model_dir / "tokenizer.json").is_file(), f"no {model_dir}: run scripts/setup.sh"
    tok = load_tokenizer(str(model_dir))
    assert tok.vocab_size == 1024
    assert tok.bos_token_id == 0
    assert tok.eos_token_id == 1
    ids = tok.encode("The quick brown fox")
    assert all(0 <= i < 1024 for i in ids)
    assert verify_roundtrip(tok, ids).length_matches


def test_bad_tokenizer_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no tokenizer\.json there"):
        HFTokenizer(str(tmp_path))
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not a valid tokenizer\.json"):
        HFTokenizer(str(bad))


def test_verify_roundtrip_detects_length_change(tiny_tokenizer: HFTokenizer) -> None:
    text_ids = tiny_tokenizer.encode("the world is big and round")
    ok = verify_roundtrip(tiny_tokenizer, text_ids)
    assert ok.length_matches
    assert ok.ids_match
    assert ok.text == "the world is big and round"
    # single-character ids that the BPE merges on re-encoding: the length does not survive
    chars = [tiny_tokenizer.encode(c)[0] for c in "hello"]
    merged = verify_roundtrip(tiny_tokenizer, chars)
    assert merged.original_len == 5
    assert merged.retokenized_len < 5
    assert not merged.length_matches
    assert not merged.ids_match


# --- a real /tokenize server ---------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    tokenizer: HF
    seen: list[dict[str, object]]

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, **body})
        if self.path == "/tokenize":
            ids = self.tokenizer.encode(
                body["prompt"], add_special_tokens=body["add_special_tokens"]
            ).ids
            answer: object = {"count": len(ids), "max_model_len": 2048, "tokens": ids}
        elif self.path == "/detokenize":
            answer = {"prompt": self.tokenizer.decode(body["tokens"])}
        elif self.path == "/bad/tokenize":
            raw = b"not json"
            self.send_response(200)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        else:
            self.send_response(500)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"boom")
            return
        raw = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def server(tiny_dir: Path) -> Iterator[tuple[str, list[dict[str, object]]]]:
    seen: list[dict[str, object]] = []
    handler = type(
        "H",
        (_Handler,),
        {"tokenizer": HF.from_file(str(tiny_dir / "tokenizer.json")), "seen": seen},
    )
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_server_tokenizer_against_a_real_server(
    server: tuple[str, list[dict[str, object]]], tiny_tokenizer: HFTokenizer
) -> None:
    url, seen = server
    tok = make_tokenizer("server", base_url=url, model="tiny", vocab_size=300)
    ids = tok.encode("hello world how are you")
    assert ids == tiny_tokenizer.encode("hello world how are you")
    assert seen[-1] == {
        "path": "/tokenize",
        "model": "tiny",
        "prompt": "hello world how are you",
        "add_special_tokens": False,
    }
    assert tok.decode(ids) == "hello world how are you"
    assert seen[-1] == {"path": "/detokenize", "model": "tiny", "tokens": ids}
    assert verify_roundtrip(tok, ids).length_matches
    d = tok.describe()
    assert d["option"] == "A (native)"
    assert d["source"] == f"{url}/tokenize"
    assert d["vocab_size"] == 300
    assert d["max_model_len"] == 2048


def test_server_tokenizer_errors(server: tuple[str, list[dict[str, object]]]) -> None:
    url, _ = server
    with pytest.raises(TargetHTTPError, match="target answered HTTP 500: boom"):
        ServerTokenizer(f"{url}/nothing").encode("x")
    with pytest.raises(StreamError, match="answer is not JSON"):
        ServerTokenizer(f"{url}/bad").encode("x")
    with pytest.raises(TargetUnreachable):
        ServerTokenizer("http://127.0.0.1:1", timeout=2).encode("x")
    with pytest.raises(ConfigError, match="must start with http"):
        ServerTokenizer("localhost:8000")


# --- Option B ------------------------------------------------------------------------------


def test_cl100k_base_offline() -> None:
    tok = make_tokenizer("cl100k_base")
    assert tok.encode("hello world") == [15339, 1917]  # the published cl100k_base ids
    assert tok.encode("<|endoftext|>") != [100257]  # special tokens are text, not specials
    text = "Benchmarking LLM serving: TTFT, ITL and TPOT — ünïcödé too."
    assert tok.decode(tok.encode(text)) == text
    assert tok.vocab_size == 100256  # A.1.4's randint(0, 100255)
    d = tok.describe()
    assert d["option"] == "B (reference)"
    assert d["name"] == "cl100k_base"
    assert d["n_vocab_with_special"] == 100277
    assert d["bos_token_id"] is None
    assert d["eos_token_id"] == 100257
    assert isinstance(load_tokenizer("cl100k_base"), TiktokenTokenizer)


def test_cl100k_round_trip_of_random_ids_is_checked() -> None:
    tok = TiktokenTokenizer()
    ids = make_workload("synthetic-uniform", seed=1).requests(1)[0].prompt_token_ids
    rt = verify_roundtrip(tok, ids)
    assert rt.original_len == len(ids)
    assert rt.retokenized_len == len(tok.encode(rt.text))
    assert rt.length_matches == (rt.retokenized_len == len(ids))


def test_unknown_tokenizer_kind() -> None:
    assert set(TOKENIZERS) == {"cl100k_base", "hf", "server"}
    with pytest.raises(
        ConfigError, match="unknown tokenizer 'spm'; known tokenizers: cl100k_base, hf, server"
    ):
        make_tokenizer("spm")

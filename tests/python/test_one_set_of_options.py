"""Issue 19: the options' defaults and checks live once, in the library function
both front doors call, so a bad value gets the same message from the command line
and from Python (the command line prints it after `webdedup: error: `)."""

import pytest

import webdedup

# (keyword arguments of Dedup, the same options as `webdedup dedup` flags)
BAD = [
    (dict(near=True, ngram=0), ["-n", "--ngram", "0"]),
    (dict(near=True, ngram=65), ["-n", "--ngram", "65"]),
    (dict(near=True, threshold=1.0), ["-n", "--threshold", "1"]),
    (dict(near=True, max_stub=5), ["-n", "--max-stub", "5"]),
    (dict(text_field="body..content"), ["--text-field", "body..content"]),
    (dict(blocks=0), ["--blocks", "0"]),
]


@pytest.mark.parametrize("kwargs,flags", BAD)
def test_a_bad_value_gets_the_same_message_from_cli_and_python(webdedup, tmp_path, kwargs, flags):
    docs = tmp_path / "in.vert"
    docs.write_text('<doc url="u" title="t">\n<p>\nword\n</p>\n</doc>\n')
    p = webdedup("dedup", "-i", docs, "-o", tmp_path / "out", "-q", *flags, check=False)
    assert p.returncode == 2, p.stderr
    prefix = "webdedup: error: "
    assert p.stderr.startswith(prefix), p.stderr
    cli_message = p.stderr[len(prefix):].strip()
    with pytest.raises(ValueError) as e:
        webdedup_module().Dedup(**kwargs)
    assert str(e.value) == cli_message


def test_check_refuses_what_python_refuses(webdedup, tmp_path):
    """`check` (the run's limits) says what `dedup` and Python say."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.vert").write_text('<doc url="u" title="t">\n<p>\nword\n</p>\n</doc>\n')
    p = webdedup("check", "-i", tmp_path / "in", "-o", tmp_path, "--near", "--ngram", "0", check=False)
    assert p.returncode == 2, p.stderr
    with pytest.raises(ValueError) as e:
        webdedup_module().Dedup(near=True, ngram=0)
    assert p.stderr.strip() == "webdedup: error: " + str(e.value)


def test_the_defaults_are_the_command_lines(webdedup, tmp_path):
    """Keyword arguments left out take the command line's defaults: a batch work
    directory records the settings its first task ran with, and a Python task with
    no options writes the very file the command line's task writes."""
    docs = tmp_path / "in.vert"
    docs.write_text('<doc url="u" title="t">\n<p>\nsome words of a paragraph\n</p>\n</doc>\n')
    webdedup("batch", "hash", "-i", docs, "-w", tmp_path / "cli", "--task-index", "0")
    webdedup_module().batch_hash(str(docs), str(tmp_path / "py"), 0, 1)
    cli = (tmp_path / "cli" / "settings").read_text()
    assert "min-para-chars=50" in cli and "partitions=64" in cli, cli
    assert (tmp_path / "py" / "settings").read_text() == cli


# (keyword arguments of batch_hash with minhash=True, the same as `webdedup batch hash
# --minhash` flags)
BAD_MINHASH = [
    (dict(verify=1.5), ["--verify", "1.5"]),
    (dict(hashes=0), ["--hashes", "0"]),
    (dict(hashes=16, bands=4, rows=8), ["--hashes", "16", "--bands", "4", "--rows", "8"]),
    (dict(shingles="words:0"), ["--shingles", "words:0"]),
]


@pytest.mark.parametrize("kwargs,flags", BAD_MINHASH)
def test_a_bad_minhash_setting_gets_the_same_message_from_batch_and_python(webdedup, tmp_path, kwargs, flags):
    docs = tmp_path / "in.vert"
    docs.write_text('<doc url="u" title="t">\n<p>\nword\n</p>\n</doc>\n')
    p = webdedup("batch", "hash", "--minhash", "-i", docs, "-w", tmp_path / "w", "--task-index", "0", *flags, check=False)
    assert p.returncode == 2, p.stderr
    # clap checks --shingles itself (its message names the flag around the same reason).
    cli_message = p.stderr.strip().splitlines()[0]
    with pytest.raises(ValueError) as e:
        webdedup_module().batch_hash(str(docs), str(tmp_path / "py"), 0, 1, minhash=True, **kwargs)
    assert str(e.value) in cli_message, (str(e.value), p.stderr)
    # MinHashDedup (stream mode) checks its settings with the same function.
    with pytest.raises(ValueError) as e2:
        webdedup_module().MinHashDedup(**kwargs)
    assert str(e2.value) == str(e.value)


def test_the_minhash_defaults_are_the_command_lines(webdedup, tmp_path):
    """batch_hash(minhash=True) with no settings records what `webdedup batch hash
    --minhash` records."""
    docs = tmp_path / "in.vert"
    docs.write_text('<doc url="u" title="t">\n<p>\nsome words of a paragraph\n</p>\n</doc>\n')
    webdedup("batch", "hash", "--minhash", "-i", docs, "-w", tmp_path / "cli", "--task-index", "0")
    webdedup_module().batch_hash(str(docs), str(tmp_path / "py"), 0, 1, minhash=True)
    cli = (tmp_path / "cli" / "settings").read_text()
    assert "verify=0.8" in cli, cli
    assert (tmp_path / "py" / "settings").read_text() == cli


def webdedup_module():
    # The fixture named `webdedup` (the binary) shadows the module's name inside
    # the tests that use it.
    return webdedup

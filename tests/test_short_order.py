"""Order in short CJK texts (signature.py, schema revision 0010): two short
texts with the same characters in another order are not copies, a
one-character edit still is, on every way of asking.

REORDERED is a list made by hand of short Chinese texts and their
reorderings with another meaning (each pair checked: the same characters,
another meaning, not a garbled line). Before the change every pair was
exact-set equal (similarity 1.0) and reported.
"""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import pytest

from simindex import IndexVersionError, SimIndex, storage
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.signature import (
    DEFAULT_THRESHOLD,
    NAME,
    NBYTES,
    exact_set,
    fingerprint_and_signature,
    one_unit,
    similarity,
)
from tests.helpers import (
    assert_dedup_is_oracle,
    assert_keys_complete,
    oracle,
    pairs_oracle,
    short_and_close,
    stored_of,
)

REORDERED = [
    ("先保存再关闭", "先关闭再保存"),  # save, then close / close, then save
    ("文件复制到目录", "目录复制到文件"),
    ("用户删除了管理员", "管理员删除了用户"),
    ("从服务器下载到本地", "从本地下载到服务器"),
    ("源文件覆盖目标文件", "目标文件覆盖源文件"),
    ("我不想去", "我想不去"),
    ("客户端连接服务器失败", "服务器连接客户端失败"),
    ("父进程等待子进程", "子进程等待父进程"),
    ("先登录再付款", "先付款再登录"),
    ("左键选择，右键取消", "右键选择，左键取消"),
    ("开始时间晚于结束时间", "结束时间晚于开始时间"),
    ("本地分支落后于远程分支", "远程分支落后于本地分支"),
    ("输入大于输出", "输出大于输入"),
    ("主机名解析为地址", "地址解析为主机名"),
    ("将文本转换为数字", "将数字转换为文本"),
    ("狗咬人", "人咬狗"),
    ("上传后删除", "删除后上传"),
    ("先备份后升级", "先升级后备份"),
    ("男孩喜欢女孩", "女孩喜欢男孩"),
    ("公司欠员工工资", "员工欠公司工资"),
    ("中国队战胜美国队", "美国队战胜中国队"),
    ("降价后购买", "购买后降价"),
    ("内存不足导致进程崩溃", "进程崩溃导致内存不足"),
    ("学生批评老师", "老师批评学生"),
    ("从磁盘加载到内存", "从内存加载到磁盘"),
    ("数据库备份到云端", "云端备份到数据库"),
    ("窗口最大化后最小化", "窗口最小化后最大化"),
    ("甲方赔偿乙方", "乙方赔偿甲方"),
    ("收入大于支出", "支出大于收入"),
    ("他打了我", "我打了他"),
    ("猫追老鼠", "老鼠追猫"),
    ("请先停止服务再卸载", "请先卸载服务再停止"),
    ("本周一开会，下周一放假", "下周一开会，本周一放假"),
    ("十点上班，五点下班", "五点上班，十点下班"),
    ("旧版本覆盖新版本", "新版本覆盖旧版本"),
    ("警告变成错误", "错误变成警告"),
    ("读取成功，写入失败", "写入成功，读取失败"),
    ("允许读取，禁止写入", "允许写入，禁止读取"),
    ("加密后压缩", "压缩后加密"),
    ("不能全部删除", "全部不能删除"),
]


def one_character_edits(text: str) -> list[str]:
    """Every one-character edit of a text: each character replaced by one
    it does not have, one inserted at each place, each deleted."""
    new = "某"
    at = [i for i, c in enumerate(text) if c != "，"]
    return (
        [text[:i] + new + text[i + 1 :] for i in at]
        + [text[:i] + new + text[i:] for i in range(len(text) + 1)]
        + [text[:i] + text[i + 1 :] for i in at]
    )


def sig(text: str) -> bytes:
    return fingerprint_and_signature(text, DEFAULT_CONFIG)[1]


def test_the_list_is_of_reorderings() -> None:
    for a, b in REORDERED:
        assert sorted(a) == sorted(b) and a != b
        assert exact_set(sig(a)) == exact_set(sig(b))  # the same units: equal as sets


def test_a_reordering_with_another_meaning_is_no_copy() -> None:
    """None of the list is reported (the target: at most 1%), where every
    pair was a copy of similarity 1.0 before; their one-character edits are
    copies (at least 95%: an edit of a character's first place when the
    text has it twice moves it in the units' order, 44 of 906 here)."""
    for a, b in REORDERED:
        assert similarity(sig(a), sig(b)) < DEFAULT_THRESHOLD, (a, b)
        assert one_unit(sig(a), sig(b)) is None
    edits = [(a, e) for a, _ in REORDERED for e in one_character_edits(a)]
    found = sum(similarity(sig(a), sig(e)) >= DEFAULT_THRESHOLD for a, e in edits)
    assert (found, len(edits)) == (862, 906)
    replaced = [(a, e) for a, e in edits if len(e) == len(a)]
    assert all(short_and_close(sig(a), sig(e)) for a, e in replaced if len(set(a)) == len(a))


def test_an_index_reports_no_reordering_and_finds_one_character_edits() -> None:
    originals = {f"o{i}": a for i, (a, _) in enumerate(REORDERED)}
    with SimIndex() as index:
        index.add_many(originals.items())
        for i, (_, b) in enumerate(REORDERED):
            assert f"o{i}" not in {m.key for m in index.query(b)}, b
        edits = [(k, e) for k, a in originals.items() for e in one_character_edits(a)]
        found = sum(k in {m.key for m in index.query(e)} for k, e in edits)
        assert found >= 0.95 * len(edits)
        assert not index.duplicates()
        index.add_many((f"r{i}", b) for i, (_, b) in enumerate(REORDERED))
        assert not index.duplicates()  # no original and its reordering paired


def cjk_texts(seed: int, n: int) -> dict[str, str]:
    """n short texts of 3 to 15 characters, each with a copy one character
    replaced, one with a character more, one with two characters swapped
    and one with a character moved."""
    chars = (
        "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    )
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    for i in range(n):
        own = rng.sample(chars, rng.randint(3, 15))
        texts[f"t{i}"] = "".join(own)
        one = list(own)
        one[rng.randrange(len(one))] = rng.choice(chars)
        texts[f"t{i}-r"] = "".join(one)
        texts[f"t{i}-i"] = "".join([*own, rng.choice(chars)])
        swapped = list(own)
        x, y = rng.sample(range(len(own)), 2)
        swapped[x], swapped[y] = swapped[y], swapped[x]
        texts[f"t{i}-s"] = "".join(swapped)
        moved = list(own)
        moved.insert(rng.randrange(len(own)), moved.pop(rng.randrange(len(own))))
        texts[f"t{i}-m"] = "".join(moved)
    return texts


def test_every_way_of_asking_keeps_cjk_order(location: str) -> None:
    """Queries (one by one, many, held in memory), duplicates() and
    dedup_stream against the brute-force oracle (tests/helpers.py's rule
    written out: in order, one edit apart) on short CJK texts and their
    edits, swaps and moves."""
    texts = cjk_texts(6, 50)
    half = dict(list(texts.items())[::2])
    stored = stored_of(half)
    with SimIndex(location, hold=False) as index:
        index.add_many(half.items())
        assert_keys_complete(location, drained=True)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)
        queries = list(texts.values())
        assert index.query_many(queries[:40]) == [oracle(stored, t) for t in queries[:40]]
    with SimIndex(location, hold=True) as index:
        assert index.query_many(queries) == [oracle(stored, t) for t in queries]
    everything = stored_of(texts)
    want = pairs_oracle(everything)
    with SimIndex() as index:
        index.add_many(texts.items())
        assert [tuple(p) for p in index.duplicates()] == want
    assert any(p[2] > 8 for p in want)
    # Two characters swapped: no copy (a move costs what two replacements cost).
    assert not [a for a, b, *_ in want if b == f"{a}-s"]
    assert [a for a, b, *_ in want if b == f"{a}-r"]  # (one replaced: copies)
    assert_dedup_is_oracle(texts)


@pytest.mark.parametrize("revision", ["0008", "0009"])
def test_an_index_of_an_older_revision_is_upgraded(tmp_path: Path, revision: str) -> None:
    """An index whose short CJK rows keep their sets sorted (revision 0009,
    or 0008, whose keys were made under the rule of four shared units):
    refused read-only; opened to write, the signatures are named anew (and
    from 0008 every row's keys made again by 0009), the old rows compared as
    sets, the new ones in order. From 0009 the keys are kept as they were:
    a set's keys do not depend on its units' order."""
    path = tmp_path / "old.db"
    texts = {f"o{i}": a for i, (a, _) in enumerate(REORDERED)}
    texts["core"] = "Core Perl modules"
    with SimIndex(path) as index:
        index.add_many(texts.items())
    con = sqlite3.connect(path)
    with con:  # what the older revision wrote: sorted sets (0008: keys from four units)
        rows = con.execute("SELECT id, signature FROM simindex_fingerprints").fetchall()
        for row_id, signature in rows:
            units = sorted(exact_set(signature) or ())
            sorted_ = bytes(signature[:NBYTES]) + struct.pack(f"<{len(units)}I", *units)
            con.execute(
                "UPDATE simindex_fingerprints SET signature = ? WHERE id = ?", (sorted_, row_id)
            )
        if revision == "0008":
            con.execute("DELETE FROM simindex_set_keys")
        con.execute("DELETE FROM simindex_set_keys_due")
        con.execute("UPDATE simindex_alembic_version SET version_num = ?", (revision,))
        con.execute(
            "UPDATE simindex_meta SET value = 'minhash128x4/1+set15' WHERE name = 'signature'"
        )
    keys_before = set(con.execute("SELECT set_key, id FROM simindex_set_keys"))
    con.close()
    if revision == "0009":  # the keys of the sorted sets are those of the ordered ones
        assert_keys_complete(str(path), drained=True)
    with pytest.raises(IndexVersionError, match=f"schema revision {revision}"):
        SimIndex(path, readonly=True)
    by_key = dict(sqlite3.connect(path).execute("SELECT key, signature FROM simindex_fingerprints"))
    stored = {
        key: (fingerprint_and_signature(t, DEFAULT_CONFIG)[0], bytes(by_key[key]))
        for key, t in texts.items()
    }
    with SimIndex(path) as index:
        info = index.stats()
        assert (info["schema_revision"], info["signature"]) == (storage.HEAD, NAME)
        assert_keys_complete(str(path), drained=True)
        if revision == "0009":  # (0010 makes no key)
            after = sqlite3.connect(path).execute("SELECT set_key, id FROM simindex_set_keys")
            assert set(after) == keys_before
        for _, b in REORDERED:  # the old rows are sets: a reordering is equal to them
            assert index.query(b) == oracle(stored, b)
        assert [m.key for m in index.query("Apache Perl modules")] == ["core"]  # new keys
        index.add("o0", REORDERED[0][0])  # written again: in order
        stored["o0"] = fingerprint_and_signature(REORDERED[0][0], DEFAULT_CONFIG)
        assert "o0" not in {m.key for m in index.query(REORDERED[0][1])}
        for _, b in REORDERED:
            assert index.query(b) == oracle(stored, b)
    meta = dict(sqlite3.connect(path).execute("SELECT name, value FROM simindex_meta").fetchall())
    assert meta["signature"] == NAME

"""gzip, gunzip, unzip and tar: happy paths and hostile archives."""

from __future__ import annotations

import gzip
import io
import tarfile
import zipfile
from pathlib import Path

import pytest

from srh_core.workspace import Workspace, run_workspace_shell, shell_archive


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    workspace = Workspace(tmp_path / "ws")
    workspace.write_text("data.csv", "x,y\n1,2\n")
    workspace.write_text("context.data/manifest.json", "{}", make_parents=True)
    workspace.lock("context.data")
    return workspace


def sh(ws: Workspace, command: str) -> tuple[str, str, int]:
    result = run_workspace_shell(ws, command)
    return result.stdout, result.stderr, result.exit_code


def write_tar(ws: Workspace, name: str, members: list[tarfile.TarInfo],
              payload: bytes = b"pwned") -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if name.endswith("gz") else "w") as tar:
        for member in members:
            if member.isfile():
                member.size = len(payload)
                tar.addfile(member, io.BytesIO(payload))
            else:
                tar.addfile(member)
    ws.write_bytes(name, buffer.getvalue())


def tar_member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    member = tarfile.TarInfo(name)
    member.type = kind
    member.linkname = link
    return member


def write_zip(ws: Workspace, name: str, members: dict[str, bytes],
              modes: dict[str, int] | None = None) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            info = zipfile.ZipInfo(member)
            info.external_attr = (modes or {}).get(member, 0o100644) << 16
            archive.writestr(info, data)
    ws.write_bytes(name, buffer.getvalue())


def test_gzip_round_trip(ws: Workspace) -> None:
    assert sh(ws, "gzip -k data.csv")[2] == 0
    assert ws.exists("data.csv") and ws.exists("data.csv.gz")
    assert sh(ws, "gunzip -c data.csv.gz | head -n 1")[0] == "x,y\n"
    assert sh(ws, "rm data.csv")[2] == 0
    assert sh(ws, "gunzip data.csv.gz")[2] == 0
    assert ws.read_text("data.csv") == "x,y\n1,2\n" and not ws.exists("data.csv.gz")
    assert sh(ws, "gzip data.csv")[2] == 0 and not ws.exists("data.csv")
    assert sh(ws, "gzip -d data.csv.gz")[2] == 0 and ws.exists("data.csv")
    assert "not a valid gzip" in sh(ws, "gunzip -c data.csv")[1]


def test_gzip_bomb_is_stopped_and_removed(ws: Workspace,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_archive, "MAX_EXTRACT_BYTES", 10_000)
    ws.write_bytes("bomb.gz", gzip.compress(b"\0" * 5_000_000))
    _, stderr, code = sh(ws, "gunzip bomb.gz")
    assert code == 1 and "decompression bomb" in stderr
    assert not ws.exists("bomb") and ws.exists("bomb.gz")


def test_tar_create_list_extract(ws: Workspace) -> None:
    assert sh(ws, "tar -czf backup.tgz data.csv context.data")[2] == 0
    listing = sh(ws, "tar -tzf backup.tgz")[0].split()
    assert listing == ["data.csv", "context.data", "context.data/manifest.json"]
    assert sh(ws, "mkdir out")[2] == 0
    assert sh(ws, "tar xzf backup.tgz -C out")[2] == 0
    assert ws.read_text("out/context.data/manifest.json") == "{}"
    assert sh(ws, "tar -xvf backup.tgz -C out")[0].splitlines()[0] == "out/data.csv"


@pytest.mark.parametrize("member", [
    tar_member("../evil.txt"),
    tar_member("a/../../evil.txt"),
    tar_member("/tmp/srh-evil.txt"),
    tar_member("C:/evil.txt"),
    tar_member("a\\..\\..\\evil.txt"),
    tar_member("link", tarfile.SYMTYPE, "/etc/passwd"),
    tar_member("hard", tarfile.LNKTYPE, "/etc/passwd"),
    tar_member("dev", tarfile.CHRTYPE),
    tar_member("fifo", tarfile.FIFOTYPE),
], ids=["parent", "nested_parent", "absolute", "drive", "backslash", "symlink", "hardlink",
        "device", "fifo"])
def test_hostile_tar_members_are_refused_before_extraction(
    ws: Workspace, member: tarfile.TarInfo
) -> None:
    write_tar(ws, "evil.tar", [tar_member("innocent.txt"), member])
    _, stderr, code = sh(ws, "tar -xf evil.tar")
    assert code == 1 and "refusing archive member" in stderr
    assert not ws.exists("innocent.txt")  # nothing was written
    assert not Path("/tmp/srh-evil.txt").exists()
    assert not (ws.root.parent / "evil.txt").exists()


def test_tar_cannot_overwrite_locked_paths_or_leave_through_symlinks(
    ws: Workspace, tmp_path: Path
) -> None:
    write_tar(ws, "lock.tar", [tar_member("context.data/manifest.json")])
    assert "locked" in sh(ws, "tar -xf lock.tar")[1]
    assert ws.read_text("context.data/manifest.json") == "{}"
    (tmp_path / "elsewhere").mkdir()
    (ws.root / "out").symlink_to(tmp_path / "elsewhere")
    write_tar(ws, "through.tar", [tar_member("out/x.txt")])
    assert "symlink" in sh(ws, "tar -xf through.tar")[1]
    assert not (tmp_path / "elsewhere" / "x.txt").exists()


def test_tar_member_count_and_size_limits(ws: Workspace,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_archive, "MAX_ARCHIVE_MEMBERS", 3)
    write_tar(ws, "many.tar", [tar_member(f"f{index}") for index in range(5)])
    assert "more than 3 members" in sh(ws, "tar -xf many.tar")[1]
    monkeypatch.setattr(shell_archive, "MAX_EXTRACT_BYTES", 100)
    write_tar(ws, "big.tar", [tar_member("big")], payload=b"\0" * 1000)
    assert "more than 100 bytes" in sh(ws, "tar -xf big.tar")[1]
    assert not ws.exists("big")


def test_unzip_happy_path(ws: Workspace) -> None:
    write_zip(ws, "ok.zip", {"dir/": b"", "dir/a.txt": b"alpha", "b.txt": b"beta"})
    assert "dir/a.txt" in sh(ws, "unzip -l ok.zip")[0]
    assert sh(ws, "unzip ok.zip -d extracted")[2] == 0
    assert ws.read_text("extracted/dir/a.txt") == "alpha"
    assert "already exists" in sh(ws, "unzip ok.zip -d extracted")[1]
    assert sh(ws, "unzip -o -q ok.zip -d extracted")[2] == 0


@pytest.mark.parametrize(("members", "modes"), [
    ({"ok.txt": b"1", "/tmp/srh-evil.txt": b"x"}, None),
    ({"ok.txt": b"1", "../evil.txt": b"x"}, None),
    ({"ok.txt": b"1", "link": b"/etc/passwd"}, {"link": 0o120777}),
    ({"ok.txt": b"1", "dev": b""}, {"dev": 0o020644}),
], ids=["absolute", "parent", "symlink", "device"])
def test_hostile_zip_members_are_refused(ws: Workspace, members: dict[str, bytes],
                                         modes: dict[str, int] | None) -> None:
    write_zip(ws, "evil.zip", members, modes)
    _, stderr, code = sh(ws, "unzip evil.zip")
    assert code == 1 and "refusing" in stderr
    assert not ws.exists("ok.txt") and not ws.exists("link")
    assert not Path("/tmp/srh-evil.txt").exists()


def test_zip_bomb_limits(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shell_archive, "MAX_EXTRACT_BYTES", 10_000)
    write_zip(ws, "bomb.zip", {"zeros": b"\0" * 1_000_000})
    assert "possible decompression bomb" in sh(ws, "unzip bomb.zip")[1]
    assert not ws.exists("zeros")
    monkeypatch.setattr(shell_archive, "MAX_ARCHIVE_MEMBERS", 2)
    write_zip(ws, "many.zip", {f"f{index}": b"" for index in range(3)})
    assert "more than 2 members" in sh(ws, "unzip many.zip")[1]

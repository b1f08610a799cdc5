"""A Hub-compatible HTTP server on 127.0.0.1 for tests.

It speaks the part of the Hugging Face Hub's HTTP API that ``huggingface_hub`` 2.4 and
``datasets`` 5.2 use to create repos, commit (regular and LFS files, Xet off), tag, list refs,
trees and commits, and download (``resolve``). Storage is git-like: every commit is a full
snapshot of ``path -> blob`` with a parent; branches and tags point at commits; blob bytes live
on disk under the server's folder, keyed by their sha256.

Use it from a test::

    from tests.fakes.hub_server import hub_server

    def test_roundtrip(tmp_path, monkeypatch):
        with hub_server(tmp_path) as hub:
            monkeypatch.setenv("HF_TOKEN", hub.token)
            HfApi().create_repo("org/name", repo_type="dataset")
            ...

``hub_server`` starts the server *and* points ``huggingface_hub`` and ``datasets`` at it (online,
for the loopback endpoint only), restoring every patched setting on exit. ``run_hub_server``
starts the server alone and :func:`use_hub` does the pointing, for callers that want them apart.

Gated repos: ``hub.repos[("dataset", "org/name")].gated = True`` makes file downloads and
``auth-check`` answer 403 with ``X-Error-Code: GatedRepo``, as the Hub does before the user accepts
the conditions.

Failure injection: ``hub.drop_next_commits = 1`` makes the next commit POST read half of its
body and drop the connection without answering, as a network failure mid-commit would.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import json
import os
import secrets
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

USER = "loopback-user"

# Extensions the real Hub's default .gitattributes routes through LFS.
_LFS_SUFFIXES = (
    ".parquet", ".arrow", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".safetensors", ".bin", ".pt",
    ".pth", ".ckpt", ".gguf", ".onnx", ".msgpack", ".h5", ".npy", ".npz", ".pkl", ".zip", ".gz",
    ".tar", ".model",
)
_GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in _LFS_SUFFIXES).encode()


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")


@dataclass
class Entry:
    """One file in a commit's tree."""

    sha256: str
    size: int
    lfs: bool
    oid: str  # git blob id (of the LFS pointer for LFS files)


@dataclass
class Commit:
    sha: str
    parent: str | None
    tree: dict[str, Entry]
    title: str
    message: str
    date: str


@dataclass
class Repo:
    type: str
    id: str
    private: bool
    sdk: str | None = None
    gated: bool = False
    """Gated and the user has not accepted its conditions: file downloads answer 403 GatedRepo."""
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (commit sha, message)


class HubError(Exception):
    """An HTTP error answer with the Hub's ``X-Error-Code`` header."""

    def __init__(self, status: int, message: str, code: str | None = None, body: dict | None = None):
        super().__init__(message)
        self.status, self.message, self.code, self.body = status, message, code, body


class HubServer:
    """The server's state and thread. Start with :func:`run_hub_server` or :func:`hub_server`.

    Attributes:
        url (`str`): base URL, ``http://127.0.0.1:<port>``.
        token (`str`): the one token the server accepts for writes (and private reads).
        drop_next_commits (`int`): how many upcoming commit POSTs to drop mid-body.
        requests (`list[tuple[str, str]]`): ``(method, path)`` of every request, for assertions.
    """

    def __init__(self, root: Path):
        self.root = Path(root)
        self.blob_dir = self.root / "blobs"
        self.blob_dir.mkdir(parents=True, exist_ok=True)
        self.token = "hf_loopback_" + secrets.token_hex(12)
        self.repos: dict[tuple[str, str], Repo] = {}
        self.lock = threading.RLock()
        self.drop_next_commits = 0
        self.requests: list[tuple[str, str]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> HubServer:
        server = self

        class Handler(_Handler):
            hub = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._thread.join(timeout=5)
            self._httpd = None

    # -- blobs -------------------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.blob_dir / sha
        if not path.exists():
            tmp = path.with_suffix(f".tmp{threading.get_ident()}")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        return sha

    def has_blob(self, sha256: str) -> bool:
        return (self.blob_dir / sha256).exists()

    def read_blob(self, sha256: str) -> bytes:
        return (self.blob_dir / sha256).read_bytes()

    def _entry(self, data: bytes, lfs: bool) -> Entry:
        sha = self.put_blob(data)
        if lfs:
            pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize {len(data)}\n"
            return Entry(sha, len(data), True, _git_blob_sha1(pointer.encode()))
        return Entry(sha, len(data), False, _git_blob_sha1(data))

    # -- repos -------------------------------------------------------------------------------
    def create_repo(self, repo_type: str, repo_id: str, private: bool = False, sdk: str | None = None) -> Repo:
        with self.lock:
            repo = Repo(repo_type, repo_id, private, sdk)
            tree = {".gitattributes": self._entry(_GITATTRIBUTES, lfs=False)}
            sha = self._new_commit(repo, None, tree, "initial commit", "")
            repo.branches["main"] = sha
            self.repos[(repo_type, repo_id)] = repo
            return repo

    def _new_commit(self, repo: Repo, parent: str | None, tree: dict[str, Entry], title: str, message: str) -> str:
        listing = json.dumps({p: e.oid for p, e in sorted(tree.items())})
        sha = hashlib.sha1(f"{parent}\n{listing}\n{title}\n{message}\n{time.time_ns()}".encode()).hexdigest()
        repo.commits[sha] = Commit(sha, parent, tree, title, message, _now())
        return sha

    def get_repo(self, repo_type: str, repo_id: str, authorized: bool) -> Repo:
        repo = self.repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not authorized):
            raise HubError(404, f"Repository Not Found for url: {repo_type}s/{repo_id}.", "RepoNotFound")
        return repo

    def resolve(self, repo: Repo, revision: str) -> str:
        if revision in repo.branches:
            return repo.branches[revision]
        if revision in repo.tags:
            return repo.tags[revision][0]
        for prefix in ("refs/heads/", "refs/tags/"):
            if revision.startswith(prefix):
                return self.resolve(repo, revision[len(prefix):])
        if len(revision) >= 7 and all(c in "0123456789abcdef" for c in revision):
            matches = [sha for sha in repo.commits if sha.startswith(revision)]
            if len(matches) == 1:
                return matches[0]
        raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")

    def tags(self, repo_type: str, repo_id: str) -> list[str]:
        """The repo's tag names (for assertions)."""
        with self.lock:
            return sorted(self.get_repo(repo_type, repo_id, authorized=True).tags)

    def tree_at(self, repo_type: str, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        """Every file of a repo at a revision, as ``{path: bytes}`` (for assertions)."""
        with self.lock:
            repo = self.get_repo(repo_type, repo_id, authorized=True)
            tree = repo.commits[self.resolve(repo, revision)].tree
            return {path: self.read_blob(e.sha256) for path, e in tree.items()}


def _file_json(path: str, e: Entry, commit: Commit | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "file", "oid": e.oid, "size": e.size, "path": path}
    if e.lfs:
        out["lfs"] = {"oid": e.sha256, "size": e.size, "pointerSize": 134}
    if commit is not None:
        out["lastCommit"] = {"id": commit.sha, "title": commit.title, "date": commit.date}
    return out


def _dir_json(path: str, tree: dict[str, Entry]) -> dict[str, Any]:
    inside = sorted(f"{p}:{e.oid}" for p, e in tree.items() if p.startswith(path + "/"))
    return {"type": "directory", "oid": hashlib.sha1("\n".join(inside).encode()).hexdigest(), "size": 0, "path": path}


def _directories(tree: dict[str, Entry]) -> set[str]:
    dirs = set()
    for p in tree:
        parts = p.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return dirs


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"
    timeout = 30  # bounds a stuck keep-alive connection
    # An answer's headers and body leave in two writes: with Nagle's algorithm on, the body waits
    # for the client's delayed ACK of the headers (up to 40 ms on Linux), as a real server does not.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures anyway
        pass

    # -- plumbing ----------------------------------------------------------------------------
    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorized(self) -> bool:
        return self.headers.get("Authorization", "") == f"Bearer {self.hub.token}"

    def _require_auth(self) -> None:
        if not self.headers.get("Authorization"):
            raise HubError(401, "You must be authenticated to access this resource.")
        if not self._authorized():
            raise HubError(401, "Invalid credentials in Authorization header")

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("Content-Type", "application/json")
        headers["Content-Length"] = headers.get("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        self.query = {k: v[-1] for k, v in parse_qs(split.query).items()}
        self.segments = [unquote(s) for s in split.path.strip("/").split("/")]
        with self.hub.lock:
            self.hub.requests.append((method, split.path))
        try:
            self._route(method, self.segments)
        except HubError as e:
            headers = {"X-Error-Message": e.message}
            if e.code:
                headers["X-Error-Code"] = e.code
            body = {"error": e.message, **(e.body or {})}
            self._send(e.status, b"" if method == "HEAD" else json.dumps(body).encode(), headers, head=method == "HEAD")
        except _Dropped:
            self.close_connection = True
        except Exception as e:  # a server bug: answer 500 so the client reports it instead of retrying
            self.close_connection = True
            self._send(500, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode(), head=method == "HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # -- routing -----------------------------------------------------------------------------
    def _route(self, method: str, s: list[str]) -> None:
        hub = self.hub
        if s[:2] == ["api", "whoami-v2"]:
            self._require_auth()
            return self._json({
                "type": "user", "name": USER, "fullname": "Loopback User", "orgs": [],
                "auth": {"type": "access_token", "accessToken": {"displayName": "loopback", "role": "write"}},
            })
        if s[:2] == ["api", "validate-yaml"] and method == "POST":
            return self._validate_yaml()
        if s[:3] == ["api", "repos", "create"] and method == "POST":
            return self._create_repo()
        if s[:3] == ["api", "repos", "delete"] and method == "DELETE":
            self._require_auth()
            body = json.loads(self._read_body() or b"{}")
            repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
            with hub.lock:
                if hub.repos.pop((body.get("type") or "model", repo_id), None) is None:
                    raise HubError(404, "Repository not found", "RepoNotFound")
            return self._json({})
        if s[0] == "lfs-upload" and len(s) == 2 and method == "PUT":
            return self._lfs_put(s[1])
        if s[0] == "api" and len(s) >= 4 and s[1] in ("models", "datasets", "spaces"):
            return self._api_repo(method, s[1][:-1], f"{s[2]}/{s[3]}", s[4:])
        # /{datasets|spaces/}ns/name(.git/info/lfs/objects/batch | /resolve/rev/path)
        repo_type = "model"
        if s[0] in ("datasets", "spaces"):
            repo_type, s = s[0][:-1], s[1:]
        if len(s) >= 5 and s[1].endswith(".git") and s[2:] == ["info", "lfs", "objects", "batch"]:
            return self._lfs_batch(repo_type, f"{s[0]}/{s[1][:-4]}")
        if len(s) >= 5 and s[2] == "resolve" and method in ("GET", "HEAD"):
            return self._resolve(method, repo_type, f"{s[0]}/{s[1]}", s[3], "/".join(s[4:]))
        raise HubError(404, f"Not found: {method} {self.path}")

    def _api_repo(self, method: str, repo_type: str, repo_id: str, rest: list[str]) -> None:
        hub = self.hub
        with hub.lock:
            repo = hub.get_repo(repo_type, repo_id, self._authorized())
        if not rest or rest[0] == "revision":
            rev = rest[1] if rest else "main"
            return self._repo_info(repo, rev)
        action, args = rest[0], rest[1:]
        if action == "auth-check" and method == "GET":  # HfApi.auth_check: may this token read the repo's files?
            if repo.gated:
                raise HubError(403, f"Access to {repo_type} {repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in.", "GatedRepo")
            return self._json({})
        if action == "preupload" and method == "POST":
            return self._preupload(repo, args[0])
        if action == "commit" and method == "POST":
            return self._commit(repo, "/".join(args))
        if action == "refs":
            with hub.lock:
                ref = lambda kind, name, sha: {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": sha}  # noqa: E731
                data = {
                    "branches": [ref("heads", n, sha) for n, sha in repo.branches.items()],
                    "tags": [ref("tags", n, sha) for n, (sha, _) in repo.tags.items()],
                    "converts": [],
                }
                if "include_prs" in self.query:
                    data["pullRequests"] = []
            return self._json(data)
        if action == "commits":
            with hub.lock:
                sha = hub.resolve(repo, args[0] if args else "main")
                out = []
                while sha is not None:
                    c = repo.commits[sha]
                    out.append({"id": c.sha, "title": c.title, "message": c.message, "date": c.date,
                                "authors": [{"user": USER}]})
                    sha = c.parent
            return self._json(out)
        if action == "tree":
            return self._tree(repo, args[0], "/".join(args[1:]))
        if action == "paths-info" and method == "POST":
            return self._paths_info(repo, args[0])
        if action == "tag":
            self._require_auth()
            if method == "POST":
                body = json.loads(self._read_body() or b"{}")
                with hub.lock:
                    sha = hub.resolve(repo, args[0])
                    if body["tag"] in repo.tags:
                        raise HubError(409, f"Tag {body['tag']} already exists")
                    repo.tags[body["tag"]] = (sha, body.get("message") or "")
                return self._json({})
            if method == "DELETE":
                with hub.lock:
                    if repo.tags.pop(args[0], None) is None:
                        raise HubError(404, f"Invalid rev id: {args[0]}", "RevisionNotFound")
                return self._json({})
        if action == "branch":
            self._require_auth()
            with hub.lock:
                if method == "POST":
                    body = json.loads(self._read_body() or b"{}")
                    if args[0] in repo.branches:
                        raise HubError(409, f"Branch {args[0]} already exists")
                    repo.branches[args[0]] = hub.resolve(repo, body.get("startingPoint") or "main")
                    return self._json({})
                if method == "DELETE":
                    if repo.branches.pop(args[0], None) is None:
                        raise HubError(404, f"Invalid rev id: {args[0]}", "RevisionNotFound")
                    return self._json({})
        if action == "settings" and method == "PUT":
            self._require_auth()
            body = json.loads(self._read_body() or b"{}")
            with hub.lock:
                if "private" in body:
                    repo.private = bool(body["private"])
            return self._json({})
        raise HubError(404, f"Not found: {method} {self.path}")

    # -- endpoints ---------------------------------------------------------------------------
    def _validate_yaml(self) -> None:
        body = json.loads(self._read_body() or b"{}")
        content: str = body.get("content", "")
        errors = []
        if content.startswith("---"):
            end = content.find("\n---", 3)
            try:
                meta = yaml.safe_load(content[3:end] if end > 0 else "")
                if meta is not None and not isinstance(meta, dict):
                    errors.append({"message": "YAML metadata must be a mapping"})
            except yaml.YAMLError as e:
                errors.append({"message": f"Invalid YAML: {e}"})
        if errors:
            return self._json({"errors": errors, "warnings": []}, status=400)
        return self._json({"errors": [], "warnings": []})

    def _create_repo(self) -> None:
        self._require_auth()
        body = json.loads(self._read_body() or b"{}")
        repo_type = body.get("type") or "model"
        namespace = body.get("organization") or USER
        repo_id = f"{namespace}/{body['name']}"
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.hub.url}/{prefix}{repo_id}"
        with self.hub.lock:
            if (repo_type, repo_id) in self.hub.repos:
                # The real Hub's 409 carries the url; create_repo(exist_ok=True) reads it.
                raise HubError(409, "You already created this repo", body={"url": url})
            private = body.get("visibility", "private" if body.get("private") else "public") != "public"
            self.hub.create_repo(repo_type, repo_id, private=private, sdk=body.get("sdk"))
        self._json({"url": url, "name": repo_id, "id": repo_id})

    def _repo_info(self, repo: Repo, revision: str) -> None:
        hub = self.hub
        with hub.lock:
            sha = hub.resolve(repo, revision)
            commit = repo.commits[sha]
            siblings = []
            for path, e in sorted(commit.tree.items()):
                sib = {"rfilename": path, "size": e.size, "blobId": e.oid}
                if e.lfs:
                    sib["lfs"] = {"size": e.size, "sha256": e.sha256, "pointerSize": 134}
                siblings.append(sib)
            card = None
            if "README.md" in commit.tree:
                text = hub.read_blob(commit.tree["README.md"].sha256).decode("utf-8", "replace")
                if text.startswith("---"):
                    end = text.find("\n---", 3)
                    with contextlib.suppress(yaml.YAMLError):
                        card = yaml.safe_load(text[3:end]) if end > 0 else None
        info = {
            "_id": hashlib.md5(repo.id.encode()).hexdigest()[:24], "id": repo.id, "author": repo.id.split("/")[0],
            "sha": sha, "private": repo.private, "gated": "auto" if repo.gated else False, "disabled": False, "downloads": 0, "likes": 0,
            "lastModified": commit.date, "createdAt": commit.date, "tags": [], "siblings": siblings,
        }
        if isinstance(card, dict):
            info["cardData"] = card
        if repo.type == "space":
            info["sdk"] = repo.sdk
        self._json(info)

    def _preupload(self, repo: Repo, revision: str) -> None:
        self._require_auth()
        body = json.loads(self._read_body() or b"{}")
        with self.hub.lock:
            tree = repo.commits[self.hub.resolve(repo, revision)].tree
        files = []
        for f in body.get("files", []):
            sample = base64.b64decode(f.get("sample", ""))
            binary = b"\0" in sample
            try:
                sample.decode("utf-8")
            except UnicodeDecodeError:
                binary = True
            lfs = binary or f["path"].lower().endswith(_LFS_SUFFIXES) or f.get("size", 0) > 10 * 2**20
            existing = tree.get(f["path"])
            oid = None if existing is None else (existing.sha256 if existing.lfs else existing.oid)
            files.append({"path": f["path"], "uploadMode": "lfs" if lfs else "regular",
                          "shouldIgnore": False, "oid": oid})
        self._json({"files": files, "commitOid": self.hub.resolve(repo, revision)})

    def _lfs_batch(self, repo_type: str, repo_id: str) -> None:
        self._require_auth()
        with self.hub.lock:
            self.hub.get_repo(repo_type, repo_id, True)
        body = json.loads(self._read_body() or b"{}")
        objects = []
        for obj in body.get("objects", []):
            out = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if not self.hub.has_blob(obj["oid"]):
                out["actions"] = {"upload": {"href": f"{self.hub.url}/lfs-upload/{obj['oid']}", "header": {}}}
            objects.append(out)
        self._json({"transfer": "basic", "objects": objects, "hash_algo": "sha256"},
                   headers={"Content-Type": "application/vnd.git-lfs+json"})

    def _lfs_put(self, oid: str) -> None:
        data = self._read_body()
        if hashlib.sha256(data).hexdigest() != oid:
            raise HubError(400, f"Uploaded content does not match oid {oid}")
        self.hub.put_blob(data)
        self._send(200, b"")

    def _commit(self, repo: Repo, revision: str) -> None:
        self._require_auth()
        hub = self.hub
        if hub.drop_next_commits > 0:
            hub.drop_next_commits -= 1
            # Read part of the body, then vanish: what a dropped connection mid-commit looks like.
            self.rfile.read(max(1, int(self.headers.get("Content-Length") or 2) // 2))
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            raise _Dropped()
        lines = [json.loads(line) for line in self._read_body().splitlines() if line.strip()]
        header = next((x["value"] for x in lines if x["key"] == "header"), None)
        if header is None:
            raise HubError(400, "Missing commit header")
        with hub.lock:
            if revision not in repo.branches:
                raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
            head = repo.branches[revision]
            if header.get("parentCommit") and header["parentCommit"] != head:
                raise HubError(412, "A commit has happened since. Please refresh and try again.")
            tree = copy.copy(repo.commits[head].tree)
            for item in lines:
                key, v = item["key"], item["value"]
                if key == "file":
                    tree[v["path"]] = hub._entry(base64.b64decode(v["content"]), lfs=False)
                elif key == "lfsFile":
                    if not hub.has_blob(v["oid"]):
                        raise HubError(400, f"LFS object {v['oid']} for {v['path']} was never uploaded")
                    data = hub.read_blob(v["oid"])
                    tree[v["path"]] = hub._entry(data, lfs=True)
                elif key == "deletedFile":
                    if tree.pop(v["path"], None) is None:
                        raise HubError(404, f"A file with this name doesn't exist: {v['path']}", "EntryNotFound")
                elif key == "deletedFolder":
                    prefix = v["path"].rstrip("/") + "/"
                    for p in [p for p in tree if p.startswith(prefix)]:
                        del tree[p]
            sha = hub._new_commit(repo, head, tree, header.get("summary", ""), header.get("description", ""))
            repo.branches[revision] = sha
        prefix = "" if repo.type == "model" else f"{repo.type}s/"
        self._json({"success": True, "commitOid": sha, "commitUrl": f"{hub.url}/{prefix}{repo.id}/commit/{sha}",
                    "pullRequestUrl": None})

    def _tree(self, repo: Repo, revision: str, path: str) -> None:
        hub = self.hub
        recursive = self.query.get("recursive", "false").lower() in ("1", "true")
        expand = self.query.get("expand", "false").lower() in ("1", "true")
        with hub.lock:
            commit = repo.commits[hub.resolve(repo, revision)]
            tree = commit.tree
        path = path.strip("/")
        dirs = _directories(tree)
        if path and path not in dirs:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        prefix = path + "/" if path else ""
        out = []
        for d in sorted(dirs):
            if d.startswith(prefix) and (recursive or "/" not in d[len(prefix):]):
                out.append(_dir_json(d, tree))
        for p, e in sorted(tree.items()):
            if p.startswith(prefix) and (recursive or "/" not in p[len(prefix):]):
                out.append(_file_json(p, e, commit if expand else None))
        self._json(out)

    def _paths_info(self, repo: Repo, revision: str) -> None:
        body = self._read_body().decode()
        form = parse_qs(body) if "json" not in self.headers.get("Content-Type", "") else json.loads(body)
        paths = form.get("paths", [])
        expand = str((form.get("expand") or ["false"])[-1]).lower() in ("1", "true")
        with self.hub.lock:
            commit = repo.commits[self.hub.resolve(repo, revision)]
        dirs = _directories(commit.tree)
        out = []
        for p in paths:
            p = p.strip("/")
            if p in commit.tree:
                out.append(_file_json(p, commit.tree[p], commit if expand else None))
            elif p in dirs:
                out.append(_dir_json(p, commit.tree))
        self._json(out)

    def _resolve(self, method: str, repo_type: str, repo_id: str, revision: str, path: str) -> None:
        hub = self.hub
        with hub.lock:
            repo = hub.get_repo(repo_type, repo_id, self._authorized())
            if repo.gated:
                raise HubError(403, f"Access to dataset {repo_id} is restricted. You must have access to it and be authenticated to access it. Please log in.", "GatedRepo")
            sha = hub.resolve(repo, revision)
            entry = repo.commits[sha].tree.get(path)
        if entry is None:
            raise HubError(404, f"Entry not found: {path}", "EntryNotFound")
        etag = f'"{entry.sha256 if entry.lfs else entry.oid}"'
        headers = {"X-Repo-Commit": sha, "ETag": etag, "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream"}
        if entry.lfs:
            headers["X-Linked-Etag"] = etag
            headers["X-Linked-Size"] = str(entry.size)
        data = hub.read_blob(entry.sha256)
        status = 200
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes="):
            start_s, _, end_s = rng[len("bytes="):].split(",")[0].partition("-")
            if start_s == "":  # suffix range: the last N bytes
                start, end = max(0, len(data) - int(end_s)), len(data) - 1
            else:
                start, end = int(start_s), min(int(end_s) if end_s else len(data) - 1, len(data) - 1)
            if start >= len(data) and len(data) > 0:
                return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, head=method == "HEAD")
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            data, status = data[start : end + 1], 206
        self._send(status, data, headers, head=method == "HEAD")


class _Dropped(Exception):
    pass


def run_hub_server(root: Path) -> HubServer:
    """Start a :class:`HubServer` storing under ``root``; call ``.stop()`` when done."""
    return HubServer(Path(root) / "hub-server").start()


@contextlib.contextmanager
def use_hub(url: str) -> Iterator[None]:
    """Point ``huggingface_hub`` and ``datasets`` at ``url``, online, and restore afterwards.

    The suite runs with ``HF_HUB_OFFLINE=1``; this switches the clients online for the loopback
    endpoint only (every request they make goes to ``url``). It patches the module-level
    settings the clients read at call time and the default ``HfApi`` instance, and clears
    ``HfFileSystem``'s instance cache on the way in and out.
    """
    import datasets.config as dconfig
    import huggingface_hub
    import huggingface_hub.hf_api as hf_api
    from huggingface_hub import constants

    saved: list[tuple[Any, str, Any]] = []

    def patch(obj: Any, name: str, value: Any) -> None:
        saved.append((obj, name, getattr(obj, name)))
        setattr(obj, name, value)

    host = urlsplit(url).hostname
    patch(constants, "ENDPOINT", url)
    patch(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")
    patch(constants, "HF_HUB_OFFLINE", False)
    patch(constants, "HF_URL_HOSTS", frozenset(constants.HF_URL_HOSTS | {host}))
    patch(hf_api.api, "endpoint", url)
    patch(dconfig, "HF_ENDPOINT", url)
    patch(dconfig, "HUB_DATASETS_URL", url + "/datasets/{repo_id}/resolve/{revision}/{path}")
    patch(dconfig, "HF_HUB_OFFLINE", False)
    patch(dconfig, "HF_DATASETS_OFFLINE", False)
    # The parquet-export lookup goes to datasets-server.<endpoint host>, which does not exist.
    patch(dconfig, "USE_PARQUET_EXPORT", False)
    patch(dconfig, "HF_UPDATE_DOWNLOAD_COUNTS", False)
    env_saved = {k: os.environ.get(k) for k in ("HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    os.environ.update({"HF_ENDPOINT": url, "HF_HUB_OFFLINE": "0", "HF_DATASETS_OFFLINE": "0"})
    huggingface_hub.HfFileSystem.clear_instance_cache()
    _forget_transformers_api()
    try:
        yield
    finally:
        _forget_transformers_api()
        for obj, name, value in reversed(saved):
            setattr(obj, name, value)
        for k, v in env_saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        huggingface_hub.HfFileSystem.clear_instance_cache()


def _forget_transformers_api() -> None:
    """transformers keeps one ``HfApi`` made on first use (``transformers.utils.hub.hf_api()``),
    with the endpoint of that moment: made before (or inside) ``use_hub``, it would send
    ``push_to_hub`` to the wrong Hub. Dropped on the way in and out, it is made again when needed."""
    hub = sys.modules.get("transformers.utils.hub")
    if hub is not None and hasattr(hub, "_hf_api"):
        hub._hf_api = None


@contextlib.contextmanager
def hub_server(root: Path) -> Iterator[HubServer]:
    """Run a loopback Hub under ``root`` with the clients pointed at it; stop and restore on exit."""
    server = run_hub_server(root)
    try:
        with use_hub(server.url):
            yield server
    finally:
        server.stop()

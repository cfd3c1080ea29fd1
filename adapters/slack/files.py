"""Files both ways in Slack: those people share in a run's thread, and those the agent shares back.

In:

    message event (subtype file_share) ── files[]: id, name, mimetype, size, url_private_download
        │  read_files: each entry checked (strings where Slack sends strings), never coerced
        ▼
    SlackFiles.fetch ── the URL Slack gave, `Authorization: Bearer <bot token>`, redirects followed by
        │               hand and only on that same host (a redirect elsewhere, or a URL on a host that
        │               is not Slack's nor the configured API's, is refused: the token never leaves);
        │               the body read up to the run's per-file limit and no further
        ▼
    Incoming(name, data | problem, mimetype) ── Hub.attach saves them and mails the run

A file that cannot be fetched becomes an `Incoming` with its problem, so the hub refuses the whole
message with one clear line and saves nothing.

Out: a message with an attachment (the agent's `share`) is uploaded with slack-sdk's `files_upload_v2`
(files.getUploadURLExternal → the bytes to the upload URL → files.completeUploadExternal into the
thread, its text as the `initial_comment`). A file gone from the disk, or over Slack's size limit, is
posted as the text alone, which names it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import aiohttp
from yarl import URL

from adapters.hub import Incoming
from adapters.platform import OutMessage, ThreadRef
from adapters.slack.inbound import PayloadError, text_field
from adapters.slack.text import defuse

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

Call = Callable[[str, Awaitable[Any]], Awaitable[Any]]  # the surface's counted slack_call

__all__ = ["FILE_ID", "SLACK_HOSTS", "UPLOAD_MAX", "SharedFile", "SlackFiles", "post_file",
           "read_files"]

log = logging.getLogger(__name__)

SLACK_HOSTS = ("slack.com", "slack-gov.com")  # Slack's own download hosts end with one of these
MAX_REDIRECTS = 3
CHUNK = 64 * 1024
FETCH_S = 60.0
UPLOAD_MAX = 1024 ** 3  # Slack takes files up to 1 GB
FILE_ID = "file:"  # the message id of an uploaded file (never edited)


@dataclass(frozen=True)
class SharedFile:
    id: str
    name: str
    mimetype: str
    size: int  # as Slack announced it (-1: not said)
    url: str  # url_private_download, else url_private ("" when Slack gave none, e.g. a tombstone)


def read_files(event: dict[str, Any]) -> list[SharedFile]:
    """The event's `files`, each entry checked; PayloadError for a broken or forged one."""
    raw = event.get("files")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(f, dict) for f in raw):
        raise PayloadError("payload field files is not a list of objects")
    out = []
    for f in raw:
        size = f.get("size", -1)
        if isinstance(size, bool) or not isinstance(size, int):
            raise PayloadError("payload field files[].size is not a number")
        url = text_field(f, "url_private_download", required=False) or text_field(f, "url_private", required=False)
        name = text_field(f, "name", required=False) or text_field(f, "title", required=False)
        out.append(SharedFile(text_field(f, "id"), name or text_field(f, "id"), text_field(f, "mimetype",
                                                                                         required=False), size, url))
    return out


class SlackFiles:
    """Downloads with the bot token, only from Slack's hosts (or the configured API's, e.g. the test double)."""

    def __init__(self, token: str, api_url: str, session: aiohttp.ClientSession | None = None) -> None:
        self._token = token
        api = URL(api_url)
        self.api_host, self.api_scheme = (api.host or "").lower(), api.scheme
        self.session = session

    def trusted(self, url: str) -> bool:
        """Whether the bot token may go with a request to `url`: Slack's own hosts over https, or the
        configured API's host over the API's own scheme (a proxy, GovSlack, the test double)."""
        try:
            parsed = URL(url)
        except ValueError:
            return False
        host = (parsed.host or "").lower()
        if not host:
            return False
        if host == self.api_host:
            return parsed.scheme == self.api_scheme
        return parsed.scheme == "https" and any(host == h or host.endswith("." + h) for h in SLACK_HOSTS)

    async def fetch(self, f: SharedFile, max_bytes: int) -> Incoming:
        """One file's bytes, or an Incoming naming why not (nothing is read past `max_bytes`)."""
        def refused(problem: str) -> Incoming:
            return Incoming(f.name, None, f.mimetype, problem)

        if not f.url:
            return refused("Slack gave no download link for it")
        if f.size > max_bytes:  # Slack said how big: no need to fetch it to refuse it
            return Incoming(f.name, None, f.mimetype, size=f.size)
        if f.size == 0:
            return Incoming(f.name, b"", f.mimetype)
        url = f.url
        try:
            for _ in range(MAX_REDIRECTS + 1):
                if not self.trusted(url):
                    log.warning("slack file %s: not downloading from untrusted host %s", f.id, URL(url).host)
                    return refused("its download link points away from Slack")
                if self.session is None:
                    return refused("the bot is not connected")
                async with self.session.get(url, headers={"Authorization": f"Bearer {self._token}"},
                                            allow_redirects=False, timeout=aiohttp.ClientTimeout(total=FETCH_S)) as r:
                    if r.status in (301, 302, 303, 307, 308):
                        target = urljoin(url, r.headers.get("Location", ""))
                        if URL(target).host != URL(url).host:
                            log.warning("slack file %s: refused a redirect to another host", f.id)
                            return refused("Slack's download redirected to another host")
                        url = target
                        continue
                    if r.status != 200:
                        return refused(f"the download failed (HTTP {r.status})")
                    if "text/html" in r.headers.get("Content-Type", "") and "html" not in f.mimetype:
                        return refused("Slack answered with a page, not the file (is the files:read scope granted?)")
                    data = bytearray()
                    async for chunk in r.content.iter_chunked(CHUNK):
                        data += chunk
                        if len(data) > max_bytes:  # Slack's size was wrong: stop reading here
                            return Incoming(f.name, None, f.mimetype, size=len(data))
                    return Incoming(f.name, bytes(data), f.mimetype)
            return refused("too many redirects")
        except (aiohttp.ClientError, TimeoutError) as exc:
            return refused(f"the download failed ({type(exc).__name__})")


async def post_file(call: Call, client: AsyncWebClient, thread: ThreadRef, msg: OutMessage) -> str | None:
    """Upload the message's file into the thread with its text; None when it cannot be (post the text)."""
    att = msg.attachment
    if att is None or att.size > UPLOAD_MAX:
        return None
    try:
        data = att.content if att.content is not None else await asyncio.to_thread(Path(att.path).read_bytes)
    except OSError as exc:
        log.warning("slack: cannot read the shared file %s: %s", att.rel or att.name, exc)
        return None
    resp = await call("files.completeUploadExternal", client.files_upload_v2(
        file=data, filename=att.name, title=att.name, channel=thread.channel, thread_ts=thread.thread or None,
        initial_comment=defuse(msg.text)))
    files = resp.get("files") or []
    fid = files[0].get("id") if files and isinstance(files[0], dict) else ""
    return FILE_ID + str(fid or att.name)

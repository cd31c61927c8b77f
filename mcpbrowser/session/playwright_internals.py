"""Every private Playwright name we rely on, in one place, so that an upgrade touches one file.

Each function says what it needs from Playwright's internals and what the caller does when the name has moved
(AttributeError or ImportError here). Called on the thread that owns the Playwright objects passed in: a session thread,
except `hook_driver` and `hook_received`, which any thread may call once.
"""


def target_closed(exc):
    """Whether a Playwright error says its page (or context) closed under the call: TargetClosedError, a class
    Playwright does not export. False when the name has moved (the failure then stays BROWSER_ERROR)."""
    try:
        from playwright._impl._errors import TargetClosedError
    except ImportError:
        return False
    return isinstance(exc, TargetClosedError)


def take_coroutine(target, method, kwargs):
    """Call target.method(**kwargs) so that it hands over its coroutine instead of running it.

    A sync API method runs its coroutine through `target._sync`; an instance attribute shadows that for
    one call. Returns (result, None) when the method finished without a coroutine, else (None, coroutine).
    """
    captured: list = []
    target._sync = captured.append
    try:
        direct = getattr(target, method)(**kwargs)
    except (AssertionError, TypeError):
        # Some wrappers map their result with from_impl, which asserts there is one (BrowserContext.storage_state), or
        # iterates it (WebMCP.tools: from_impl_list): it fails only after handing the coroutine over.
        if not captured:
            raise
        direct = None
    finally:
        del target._sync
    return (None, captured[0]) if captured else (direct, None)


class Together:
    """Several sync API calls, (target, method, kwargs) each, sent at once: one round trip for all of them.

    Run as `Together(...).run` (through SessionState.act): a list of each call's outcome, in order, an
    exception for one that failed. Their coroutines are taken as take_coroutine takes one, and gathered.
    """

    def __init__(self, *calls):
        self.calls = calls

    def run(self):
        import asyncio  # here, not at module top: keeps it off the path to `initialize`

        taken = [take_coroutine(target, method, kwargs) for target, method, kwargs in self.calls]

        async def gathered():
            waiting = [asyncio.ensure_future(c) for _, c in taken if c is not None]
            done = iter(await asyncio.gather(*waiting, return_exceptions=True))
            return [direct if coroutine is None else next(done) for direct, coroutine in taken]

        return self._sync(gathered())  # take_coroutine's, for this one call

    def _sync(self, coroutine):
        """Run a coroutine as the first call's target runs its own (run_coroutine, while act waits)."""
        return run_coroutine(self.calls[0][0], coroutine)


def run_coroutine(target, coroutine):
    """Run a coroutine on the target's dispatcher, as its sync methods do (events keep flowing)."""
    return target._sync(coroutine)


def event_loop(page):
    """The asyncio loop under a sync Page (the session thread's own)."""
    return page._loop


def driver_pid(manager):
    """The pid of a sync_playwright() manager's Node.js driver (AttributeError when that moved)."""
    return manager._client._transport._proc.pid


def transport_error_future(manager):
    """The Future a manager's transport fails when its process ends (AttributeError when that moved)."""
    return manager._client._transport.on_error_future


def hook_driver(command_for_thread, env_for_thread):
    """Have Playwright ask command_for_thread() for the driver command it starts (None: its own), and
    env_for_thread() for variables to add to that driver's environment (None: none).

    Raises ImportError or AttributeError when Playwright moved the functions.
    """
    from playwright._impl import transport

    original_command, original_env = transport.compute_driver_executable, transport.get_driver_env

    def driver_executable():
        command = command_for_thread()
        return command if command else original_command()

    def driver_env():
        return {**original_env(), **(env_for_thread() or {})}

    transport.compute_driver_executable, transport.get_driver_env = driver_executable, driver_env


def hook_received(transform):
    """Pass every message Playwright's transports receive through transform(raw, parsed), which returns
    the message Playwright then dispatches: the one door through which everything a page says enters.

    Raises ImportError or AttributeError when Playwright moved the method.
    """
    from playwright._impl.transport import Transport

    original = Transport.deserialize_message

    def deserialize_message(self, data):
        return transform(data, original(self, data))

    Transport.deserialize_message = deserialize_message  # type: ignore[method-assign]


def mark_as_remote(playwright):
    """Treat the connection as connect() does: the server refuses local file paths, so uploads send bytes."""
    playwright._impl_obj._connection.mark_as_remote()


def pre_launched_browser(playwright):
    """The browser a browser server hands each connection, as a sync Browser."""
    from playwright._impl._sync_base import mapping

    return mapping.from_impl(playwright._impl_obj._pre_launched_browser())


def stop_trace_into(context, path):
    """Stop the context's tracing and save the browser server's trace archive at `path`.

    Tracing.stop(path) needs the client-side LocalUtils, which a relayed connection does not have ("Cannot
    save trace in thin clients"); the server's archive alone is the whole trace, less the client's stack sources.
    """
    from playwright._impl.artifact import Artifact

    tracing = context.tracing._impl_obj
    if tracing._connection.local_utils() is not None:  # a Node.js driver of the session's own
        context.tracing.stop(path=path)
        return

    async def stop():
        result = await tracing._channel.tracingStopChunk(mode="archive", timeout=0)
        if result.get("artifact"):
            artifact = Artifact.from_(result["artifact"])
            await artifact.save_as(path=path)
            await artifact.delete()
        await tracing._channel.tracingStop(timeout=0)

    run_coroutine(context.tracing, stop())


def on_main_frame_navigated(page, handler):
    """Call handler(new_document) for each navigation the page's main frame commits.

    Playwright's public `framenavigated` fires alike for a new document and for a same-document change
    (History API, a fragment); its frame's private "navigated" event carries `newDocument`, set only for
    the former. When that name has moved (AttributeError), the caller counts every navigation as new.
    """
    emitter = page.main_frame._impl_obj._event_emitter

    def navigated(event):
        if not event.get("error"):
            # Set is what counts, not its content: a document no request loaded (about:blank, a data: URL)
            # comes with an empty one, which read as false made it the same document, its old refs kept.
            handler(event.get("newDocument") is not None)

    emitter.on("navigated", navigated)


def download_file(download):
    """Where the browser writes a download (the file, `.crdownload` while it streams), or None: the caller then
    holds the download to its size once the browser has it all."""
    return download._impl_obj._artifact._initializer.get("absolutePath")


def cancel_download(download):
    """The coroutine that cancels a download (Browser.cancelDownload), to await on the session's loop."""
    return download._impl_obj.cancel()

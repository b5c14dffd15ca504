#!/usr/bin/env python3
"""The web remote's page in a real browser, against a running tonearmd.

Headless Chromium (driven by Selenium) loads the page; what it does is checked against the
daemon through the `tonearm` CLI, and what the daemon does is checked on the page:

    python page_test.py --url http://127.0.0.1:PORT --tonearm /path/to/tonearm \
        --socket /path/control.sock --screenshots DIR [--token TOKEN]

With --token (the daemon's [web] token), the page must ask for it before anything else, log in
and go on with a session cookie it cannot read.

The daemon must have a music directory with an index and at least two tracks queued.
Exits 0 when every check holds, 1 with what failed otherwise, 2 when the browser cannot start.
Prints what it measured.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# How late a track change may reach the page, counted from the daemon's reply to `next`.
TRACK_CHANGE_LIMIT = 0.200


class CheckFailed(Exception):
    pass


def say(message):
    print(message, flush=True)


# ------------------------------------------------------------------ the daemon, through the CLI

class Daemon:
    def __init__(self, tonearm, socket):
        self.tonearm = tonearm
        self.socket = socket

    def run(self, *arguments):
        command = [self.tonearm, "--socket", self.socket, *arguments]
        result = subprocess.run(command, capture_output=True, text=True, timeout=15)
        if result.returncode != 0:
            raise CheckFailed(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def status(self):
        return json.loads(self.run("status", "--json"))

    def queue(self):
        return json.loads(self.run("queue", "--json"))


def wait_until(what, predicate, timeout=5.0, interval=0.02):
    """The predicate's first truthy value; fails naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = predicate()
        if last:
            return last
        if time.monotonic() > deadline:
            raise CheckFailed(f"{what}: not within {timeout} s")
        time.sleep(interval)


# ------------------------------------------------------------------ the browser

def start_browser(width, height):
    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     f"--window-size={width},{height}", "--hide-scrollbars", "--mute-audio"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def set_viewport(driver, width, height):
    """An exact viewport: with --headless=new, set_window_size sets the outer size."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
        "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600,
    })
    # The page reacts to the resize (layout, the cover's size step) on its next frames.
    driver.execute_async_script("requestAnimationFrame(() => requestAnimationFrame(arguments[0]))")


def js(driver, script, *arguments):
    return driver.execute_script(script, *arguments)


def status_seq(driver):
    return int(js(driver, "return Number(document.body.dataset.statusSeq || 0)"))


def title_text(driver):
    return js(driver, "return document.getElementById('title').textContent")


def show_tab(driver, name):
    """Shows a panel: its tab is clicked unless the layout shows the panel anyway."""
    tab = driver.find_element(By.ID, f"tab-{name}")
    if tab.is_displayed():
        tab.click()
    wait_until(f"the {name} panel shows", lambda: driver.find_element(By.ID, f"panel-{name}").is_displayed())


def ensure_playing(daemon):
    if daemon.status()["state"] != "playing":
        daemon.run("play")
        wait_until("the daemon plays", lambda: daemon.status()["state"] == "playing")


# ------------------------------------------------------------------ the checks

def check_page_loads(driver, daemon, url):
    ensure_playing(daemon)
    started = time.monotonic()
    driver.get(url)
    wait_until("#connection says the WebSocket is open",
               lambda: driver.find_element(By.ID, "connection").get_attribute("data-state") == "open")
    wait_until("a status event was applied", lambda: status_seq(driver) >= 1)
    expected = daemon.status().get("title")
    wait_until(f"#title shows {expected!r}", lambda: title_text(driver) == expected)
    connection = driver.find_element(By.ID, "connection").text
    if connection != "connected":
        raise CheckFailed(f"#connection says {connection!r}, not 'connected'")
    track = js(driver, "return document.getElementById('title').parentElement.dataset.track")
    if track != expected:
        raise CheckFailed(f"#title's parent has data-track {track!r}, not {expected!r}")
    say(f"page: connected, title {expected!r} and artist {driver.find_element(By.ID, 'artist').text!r} "
        f"shown {time.monotonic() - started:.2f} s after loading began")


def check_login(driver, daemon, url, token):
    """The page asks for the token (its WebSocket was refused), logs in with it, and the
    session cookie then opens the WebSocket; the page's scripts cannot read the cookie."""
    started = time.monotonic()
    driver.get(url)
    form = driver.find_element(By.ID, "token-form")
    wait_until("#token-form asks for the token", form.is_displayed)
    if driver.find_element(By.ID, "connection").get_attribute("data-state") == "open":
        raise CheckFailed("the WebSocket opened before the token was given")
    asked = time.monotonic() - started
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "token-submit").click()
    wait_until("#token-form goes once the token is taken", lambda: not form.is_displayed())
    wait_until("#connection says the WebSocket is open after logging in",
               lambda: driver.find_element(By.ID, "connection").get_attribute("data-state") == "open")
    wait_until("a status event was applied", lambda: status_seq(driver) >= 1)
    if "tonearm-session" in js(driver, "return document.cookie"):
        raise CheckFailed("the session cookie is readable by the page's scripts (not HttpOnly)")
    if not any(cookie["name"] == "tonearm-session" and cookie.get("httpOnly") for cookie in driver.get_cookies()):
        raise CheckFailed(f"no HttpOnly tonearm-session cookie: {driver.get_cookies()}")
    say(f"login: the token was asked for {asked:.2f} s after loading began; logged in, the WebSocket opened")


def check_cover(driver, daemon):
    artwork = daemon.status().get("artwork")
    expected = f"/art/{artwork['id']}?" if artwork else "/art/placeholder?"

    def loaded():
        cover = js(driver, """
            const img = document.getElementById('cover');
            return { src: img.getAttribute('src') || '', complete: img.complete, width: img.naturalWidth,
                     shown: img.getBoundingClientRect().width };""")
        return cover if cover["complete"] and cover["width"] > 0 and cover["src"].startswith(expected) else None

    cover = wait_until(f"#cover loads {expected}…", loaded)
    if not cover["src"].startswith("/art/"):
        raise CheckFailed(f"#cover's src is {cover['src']!r}, not under /art/")
    say(f"cover: {cover['src']} loaded, {cover['width']} px wide, shown at {cover['shown']:.0f} px")


def check_pause_and_play(driver, daemon):
    ensure_playing(daemon)
    button = driver.find_element(By.ID, "play-pause")
    wait_until("#play-pause offers Pause", lambda: button.get_attribute("aria-label") == "Pause" and button.is_enabled())
    started = time.monotonic()
    button.click()
    wait_until("the daemon pauses after a click on #play-pause", lambda: daemon.status()["state"] == "paused")
    paused = time.monotonic() - started
    wait_until("#play-pause offers Play once paused", lambda: button.get_attribute("aria-label") == "Play")
    started = time.monotonic()
    button.click()
    wait_until("the daemon plays after a second click", lambda: daemon.status()["state"] == "playing")
    played = time.monotonic() - started
    wait_until("#play-pause offers Pause again", lambda: button.get_attribute("aria-label") == "Pause")
    say(f"play-pause: paused {paused * 1000:.0f} ms and playing again {played * 1000:.0f} ms after each click "
        "(as tonearm status saw it)")


def check_track_change_latency(driver, daemon):
    ensure_playing(daemon)
    status = daemon.status()
    if status.get("queueIndex") is None or status["queueIndex"] + 1 >= status["queueCount"]:
        raise CheckFailed(f"a next track is needed, but the queue is at {status.get('queueIndex')} of {status['queueCount']}")
    before = title_text(driver)
    seq = status_seq(driver)
    # Also timed in the page, on the wall clock Python shares with it.
    js(driver, """
        window.titleChangedAt = 0;
        const title = document.getElementById('title'), before = title.textContent;
        new MutationObserver((_, observer) => {
            if (title.textContent !== before) { window.titleChangedAt = Date.now(); observer.disconnect(); }
        }).observe(title, { childList: true, characterData: true, subtree: true });""")
    started, started_wall = time.monotonic(), time.time()
    daemon.run("next")
    replied, replied_wall = time.monotonic(), time.time()
    deadline = replied + 5
    polls = 0
    while True:
        polls += 1
        now_title = title_text(driver)
        seen = time.monotonic()
        if now_title != before:
            break
        if seen > deadline:
            raise CheckFailed(f"#title still shows {before!r} 5 s after `tonearm next`")
        time.sleep(0.005)
    changed_wall = js(driver, "return window.titleChangedAt") / 1000
    expected = daemon.status().get("title")
    if now_title != expected:
        raise CheckFailed(f"#title shows {now_title!r} after `next`, the daemon says {expected!r}")
    if status_seq(driver) <= seq:
        raise CheckFailed("the title changed without a status event being counted in body[data-status-seq]")
    from_reply, from_start = seen - replied, seen - started
    say(f"track change: {before!r} → {now_title!r} seen by polling {from_reply * 1000:.0f} ms after the CLI's reply "
        f"({from_start * 1000:.0f} ms after it started, {polls} polls); in the page "
        f"{(changed_wall - replied_wall) * 1000:+.0f} ms from the reply, {(changed_wall - started_wall) * 1000:.0f} ms from the start")
    if from_reply > TRACK_CHANGE_LIMIT:
        raise CheckFailed(f"the track change reached the page {from_reply * 1000:.0f} ms after the reply "
                          f"(limit {TRACK_CHANGE_LIMIT * 1000:.0f} ms)")


def check_seek_bar_moves(driver, daemon):
    ensure_playing(daemon)
    status = daemon.status()
    if status.get("duration") and status["duration"] - status["elapsed"] < 5:
        daemon.run("seek", "0")
    wait_until("the page shows playback", lambda: js(driver, "return document.getElementById('play-pause').dataset.state") == "playing")
    for attempt in range(3):
        seq = status_seq(driver)
        first, first_at = float(driver.find_element(By.ID, "seek").get_attribute("data-elapsed")), time.monotonic()
        time.sleep(1.5)
        second, second_at = float(driver.find_element(By.ID, "seek").get_attribute("data-elapsed")), time.monotonic()
        if status_seq(driver) != seq:
            say("seek bar: an event arrived meanwhile; measuring again")
            continue
        grew, waited = second - first, second_at - first_at
        shown = driver.find_element(By.ID, "elapsed").text
        say(f"seek bar: data-elapsed {first:.2f} → {second:.2f} s, grew {grew:.2f} s in {waited:.2f} s with no event "
            f"(#elapsed shows {shown})")
        if abs(grew - 1.5) > 0.5:
            raise CheckFailed(f"#seek's data-elapsed grew {grew:.2f} s in {waited:.2f} s, not about 1.5 s")
        return
    raise CheckFailed("events kept arriving: no quiet 1.5 s to watch the seek bar in")


def check_search_adds(driver, daemon, query):
    show_tab(driver, "library")
    before = daemon.status()["queueCount"]
    field = driver.find_element(By.ID, "search")
    field.clear()
    field.send_keys(query)
    started = time.monotonic()

    def result():
        for row in driver.find_elements(By.CSS_SELECTOR, "#search-results li[data-path]"):
            if query.lower() in row.text.lower():
                return row
        return None

    row = wait_until(f"#search-results lists {query!r}", result)
    found = time.monotonic() - started
    path = row.get_attribute("data-path")
    count = len(driver.find_elements(By.CSS_SELECTOR, "#search-results li[data-path]"))
    row.find_element(By.CSS_SELECTOR, ".add").click()
    wait_until(f"the queue grows from {before} after adding {path}", lambda: daemon.status()["queueCount"] == before + 1)
    last = daemon.queue()["items"][-1]
    if last["path"] != path and not last["path"].endswith("/" + path):
        raise CheckFailed(f"the queue's last item is {last['path']!r}, not the result added ({path!r})")
    say(f"search: {query!r} found {count} result(s) in {found * 1000:.0f} ms; adding {path!r} made the queue {before} → {before + 1}")


def check_queue_remove(driver, daemon):
    show_tab(driver, "queue")
    before = daemon.status()["queueCount"]
    rows = "#queue li[data-item-id]"
    wait_until(f"#queue lists {before} items", lambda: len(driver.find_elements(By.CSS_SELECTOR, rows)) == before)
    last = driver.find_elements(By.CSS_SELECTOR, rows)[-1]
    item = last.get_attribute("data-item-id")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", last)
    last.find_element(By.CSS_SELECTOR, ".remove").click()
    wait_until(f"the queue shrinks from {before}", lambda: daemon.status()["queueCount"] == before - 1)
    wait_until(f"#queue lists {before - 1} items", lambda: len(driver.find_elements(By.CSS_SELECTOR, rows)) == before - 1)
    ids = [str(i["id"]) for i in daemon.queue()["items"]]
    if item in ids:
        raise CheckFailed(f"item {item} is still in the queue after its .remove was clicked")
    say(f"queue: removing item {item} made the queue {before} → {before - 1}")


def check_queue_marks_and_plays(driver, daemon):
    """The queue marks the item that plays (pushed with the track change, not asked for), and a
    tap on another row plays that one."""
    show_tab(driver, "queue")
    current = str(daemon.queue()["currentItem"])
    wait_until(f"#queue marks item {current} as playing",
               lambda: js(driver, "const r = document.querySelector('#queue li.current'); return r && r.dataset.itemId") == current)
    rows = driver.find_elements(By.CSS_SELECTOR, "#queue li[data-item-id]")
    other = next(row for row in rows if row.get_attribute("data-item-id") != current)
    item = other.get_attribute("data-item-id")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", other)
    other.find_element(By.CSS_SELECTOR, ".line1").click()
    wait_until(f"item {item} plays after its row was tapped", lambda: str(daemon.queue()["currentItem"]) == item)
    wait_until(f"#queue marks item {item}",
               lambda: js(driver, "const r = document.querySelector('#queue li.current'); return r && r.dataset.itemId") == item)
    say(f"queue: item {current} was marked as playing; tapping item {item} played it and the mark followed")


def take_screenshots(driver, directory):
    os.makedirs(directory, exist_ok=True)
    show_tab(driver, "queue")
    # The toasts of the checks before ("Added …") go by themselves.
    wait_until("the toast goes", lambda: not driver.find_element(By.ID, "toast").is_displayed(), timeout=6)
    for width, height in ((360, 740), (1280, 800)):
        set_viewport(driver, width, height)
        js(driver, "window.scrollTo(0, 0)")
        size = js(driver, "return [window.innerWidth, window.innerHeight]")
        if size != [width, height]:
            raise CheckFailed(f"the viewport is {size[0]}×{size[1]}, not {width}×{height}")
        # The cover may be asked for at another size step: wait for it, so it is in the picture.
        wait_until(f"#cover loaded at {width}×{height}", lambda: js(driver, """
            const img = document.getElementById('cover');
            return img.complete && img.naturalWidth > 0;"""), timeout=5)
        time.sleep(0.3)
        overflow = js(driver, "return document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 0:
            raise CheckFailed(f"at {width}×{height} the page is {overflow} px wider than the screen")
        path = os.path.join(directory, f"web-{width}x{height}.png")
        if not driver.save_screenshot(path):
            raise CheckFailed(f"the screenshot {path} was not saved")
        say(f"screenshot: {path}")


def check_console(driver):
    try:
        entries = driver.get_log("browser")
    except WebDriverException:
        return
    # A refused command is an HTTP error the console notes ("source": "network"); the page shows
    # those itself. A script error or a blocked resource is not.
    errors = [e["message"] for e in entries if e.get("level") == "SEVERE" and e.get("source") != "network"]
    if errors:
        raise CheckFailed("the browser's console has errors:\n  " + "\n  ".join(errors))
    say("console: no script errors")


# ------------------------------------------------------------------ main

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True, help="the web remote, http://127.0.0.1:PORT")
    parser.add_argument("--tonearm", required=True, help="the tonearm CLI")
    parser.add_argument("--socket", required=True, help="the daemon's control socket")
    parser.add_argument("--screenshots", required=True, help="where web-360x740.png and web-1280x800.png go")
    parser.add_argument("--search", help="a title to search for (default: the first queued track's)")
    parser.add_argument("--token", help="the daemon's [web] token: the page must ask for it first")
    args = parser.parse_args()
    url = args.url.rstrip("/") + "/"
    daemon = Daemon(args.tonearm, args.socket)

    try:
        queue = daemon.queue()
        if len(queue["items"]) < 2:
            raise CheckFailed(f"the daemon's queue has {len(queue['items'])} item(s); the test needs at least 2")
        query = args.search or queue["items"][0]["title"]
        if not query:
            raise CheckFailed("the first queued track has no title to search for; pass --search")
    except (CheckFailed, subprocess.SubprocessError, ValueError, KeyError) as error:
        say(f"FAILED: the daemon is not ready: {error}")
        return 1

    try:
        driver = start_browser(1280, 800)
    except WebDriverException as error:
        say(f"FAILED: Chromium ({CHROMIUM}) with {CHROMEDRIVER} did not start: {error.msg}")
        return 2

    checks = [("logging in with the token", lambda: check_login(driver, daemon, url, args.token))] if args.token else []
    checks += [
        ("the page loads", lambda: check_page_loads(driver, daemon, url)),
        ("the cover", lambda: check_cover(driver, daemon)),
        ("pause and play", lambda: check_pause_and_play(driver, daemon)),
        ("a track change reaches the page", lambda: check_track_change_latency(driver, daemon)),
        ("the seek bar moves by itself", lambda: check_seek_bar_moves(driver, daemon)),
        ("search and add", lambda: check_search_adds(driver, daemon, query)),
        ("the queue marks and plays", lambda: check_queue_marks_and_plays(driver, daemon)),
        ("remove from the queue", lambda: check_queue_remove(driver, daemon)),
        ("screenshots", lambda: take_screenshots(driver, args.screenshots)),
        ("no console errors", lambda: check_console(driver)),
    ]
    try:
        set_viewport(driver, 1280, 800)
        for name, check in checks:
            try:
                check()
            except (CheckFailed, WebDriverException, subprocess.SubprocessError, ValueError, KeyError) as error:
                message = error.msg if isinstance(error, WebDriverException) else error
                say(f"FAILED: {name}: {message}")
                failure = os.path.join(args.screenshots, "web-failure.png")
                os.makedirs(args.screenshots, exist_ok=True)
                try:
                    driver.save_screenshot(failure)
                    say(f"the page as it was: {failure}")
                except WebDriverException:
                    pass
                return 1
        say("all checks passed")
        return 0
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())

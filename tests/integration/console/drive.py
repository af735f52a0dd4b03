#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The web console in a real browser: Debian's chromium, headless, driven by chromedriver
over the W3C WebDriver HTTP API (stdlib urllib, no client library). Prints TAP-style lines
"ok - ..." / "not ok - ..." that test-console.sh passes on, and saves screenshots.

drive.py CHROMEDRIVER CHROMIUM BASE_URL ALICE_TOKEN BOB_TOKEN OUT_DIR
Sandboxes are made through the API (TCP, the tenants' tokens) and watched in the page."""
import base64
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

driver_bin, chromium, base, alice, bob, out = sys.argv[1:7]
failed = 0


def ok(cond, desc, detail=""):
    global failed
    print(("ok - " if cond else "not ok - ") + desc, flush=True)
    if not cond:
        failed += 1
        if detail:
            for line in str(detail).splitlines()[:20]:
                print("# " + line, flush=True)
    return cond


def api(method, path, body=None, token=alice, headers=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw.strip() else None
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, None


# ---- WebDriver ----------------------------------------------------------------------------
def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


port = free_port()
drv = subprocess.Popen([driver_bin, "--port=%d" % port, "--allowed-ips=127.0.0.1"],
                       stdout=subprocess.DEVNULL, stderr=open(os.path.join(out, "chromedriver.log"), "w"))
WD = "http://127.0.0.1:%d" % port


def wd(method, path, body=None, timeout=60):
    data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
    req = urllib.request.Request(WD + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read())["value"]
    except urllib.error.HTTPError as e:
        v = json.loads(e.read()).get("value", {})
        raise RuntimeError("webdriver %s %s: %s" % (method, path, v.get("message", v)))


for _ in range(100):
    try:
        urllib.request.urlopen(WD + "/status", timeout=1)
        break
    except OSError:
        time.sleep(0.05)

profile = os.path.join(out, "profile")
caps = {"capabilities": {"alwaysMatch": {
    "browserName": "chrome",
    "goog:chromeOptions": {
        "binary": chromium,
        # --no-sandbox: Chromium's own sandbox needs setuid or user namespaces it may not get
        # here (root, or the suite's unprivileged uid); the page under test is ours
        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--user-data-dir=" + profile, "--window-size=1280,1000",
                 "--no-first-run", "--disable-extensions", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"],
    },
    "goog:loggingPrefs": {"browser": "ALL"},
}}}
try:
    sid = wd("POST", "/session", caps, timeout=120)["sessionId"]
except Exception as e:  # noqa: BLE001 - report why the browser did not start
    print("not ok - chromium starts under chromedriver\n# %s" % e)
    drv.terminate()
    sys.exit(1)
S = "/session/" + sid


def go(url):
    wd("POST", S + "/url", {"url": url})


def js(script, *args):
    return wd("POST", S + "/execute/sync", {"script": script, "args": list(args)})


def js_async(script, *args):
    return wd("POST", S + "/execute/async", {"script": script, "args": list(args)})


def find(css):
    v = wd("POST", S + "/element", {"using": "css selector", "value": css})
    return list(v.values())[0]


def click(css):
    wd("POST", S + "/element/%s/click" % find(css))


def type_into(css, text):
    e = find(css)
    wd("POST", S + "/element/%s/clear" % e)
    wd("POST", S + "/element/%s/value" % e, {"text": text})


def wait(fn, timeout=10.0, step=0.05):
    end = time.monotonic() + timeout
    while True:
        try:
            v = fn()
        except RuntimeError:
            v = None
        if v or time.monotonic() > end:
            return v
        time.sleep(step)


def text(css):
    return js("const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)


def logs():
    return wd("POST", S + "/se/log", {"type": "browser"})


def screenshot(name):
    png = base64.b64decode(wd("GET", S + "/screenshot"))
    with open(os.path.join(out, name), "wb") as f:
        f.write(png)


def tcp_conns():  # the browser's, without this request's own
    m = urllib.request.urlopen(urllib.request.Request(
        base + "/metrics", headers={"Authorization": "Bearer " + alice}), timeout=10).read().decode()
    for line in m.splitlines():
        if line.startswith('paddock_http_connections_open{listener="tcp"}'):
            return int(line.split()[-1]) - 1


box = None
bob_box = None
extra = None
try:
    # ---- load, sign in --------------------------------------------------------------------
    go(base + "/ui")
    ok(wait(lambda: js("return !document.getElementById('login').hidden")),
       "without a token the page asks for one")
    type_into("#token", alice)
    click("#login-form button")
    ok(wait(lambda: js("return !document.getElementById('overview').hidden")),
       "with alice's token the overview shows")
    ok(wait(lambda: "alice" in (text("#who") or "")), "the header names the tenant", text("#who"))
    url = js("return location.href")
    ok(alice not in url, "the token is not in the address", url)
    ok(js("return sessionStorage.getItem('paddock.token')") == alice,
       "the token is kept in the tab's session storage")

    # ---- a sandbox made through the API appears within a second --------------------------
    time.sleep(0.5)  # the event stream is open
    st, b = api("POST", "/v1/sandboxes", {
        "ttl_s": 600, "limits": {"memory": "256M"},
        "network": {"mode": "allowlist", "allow": ["allowed.test"]}})
    ok(st == 201, "alice creates a sandbox through the API", "%s %s" % (st, b))
    box = b["id"]
    t0 = time.monotonic()
    seen = wait(lambda: js("return !!document.querySelector('#sb-table tr[data-id=\"' + arguments[0] + '\"]')", box),
                timeout=5, step=0.02)
    dt = time.monotonic() - t0
    ok(seen and dt < 1.0, "the new sandbox appears in the overview within a second (%.3f s)" % dt)
    row = text('#sb-table tr[data-id="%s"]' % box) or ""
    ok("alice" in row and "running" in row, "its row shows tenant and state", row)
    extra = api("POST", "/v1/sandboxes", {"ttl_s": 300, "metadata": {"agent": "second"}})[1]
    ok(extra and wait(lambda: js("return !!document.querySelector('#sb-table tr[data-id=\"' + arguments[0] + '\"]')",
                                 extra["id"])), "a second sandbox shows too")
    ok(wait(lambda: "256.0 MiB" in (text('#sb-table tr[data-id="%s"]' % box) or "")),
       "its row shows memory against the limit", text('#sb-table tr[data-id="%s"]' % box))

    # ---- another tenant's sandbox never shows ----------------------------------------------
    st, b2 = api("POST", "/v1/sandboxes", {"ttl_s": 600}, token=bob)
    ok(st == 201, "bob creates a sandbox", "%s %s" % (st, b2))
    bob_box = b2["id"]
    time.sleep(1.5)
    ok(not js("return !!document.querySelector('#sb-table tr[data-id=\"' + arguments[0] + '\"]')", bob_box),
       "bob's sandbox is not in alice's overview")
    r = js_async("""const done = arguments[arguments.length - 1];
        fetch('/v1/sandboxes/' + arguments[0], {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('paddock.token')}})
        .then(r => done(r.status), e => done(String(e)));""", bob_box)
    ok(r == 404, "alice's token gets 404 for bob's sandbox id", r)
    expected_errors = [bob_box]  # that 404 is logged by the browser: not the page's error

    # ---- the sandbox page --------------------------------------------------------------------
    go(base + "/ui#/sandbox/" + box)
    ok(wait(lambda: js("return !document.getElementById('sandbox').hidden")), "the sandbox page opens")
    st, r = api("POST", "/v1/sandboxes/%s/exec" % box, {"cmd": "echo made-by-api; sleep 0.2"})
    ok(st == 200, "a command runs through the API", "%s %s" % (st, r))
    ok(wait(lambda: "echo made-by-api" in (text("#procs") or "")),
       "the command shows in the process list", text("#procs"))
    ok(wait(lambda: "0.2" in (text("#procs") or "") or "exit" in (text("#procs") or "")),
       "with its result", text("#procs"))
    # a denied egress: the proxy refuses a name no rule allows (nothing leaves the host)
    st, r = api("POST", "/v1/sandboxes/%s/exec" % box,
                {"cmd": "curl -sS -m 5 -o /dev/null -w '%{http_code}' http://denied.test/ || true"})
    ok(st == 200, "a connection to a name not allowed is made", "%s %s" % (st, r))
    ok(wait(lambda: "denied.test" in (text("#egress") or "")),
       "the denied egress appears in the table", text("#egress"))
    first = js("const r = document.querySelector('#egress tbody tr'); return r ? r.cells[0].textContent : null")
    ok(first == "deny", "denials come first", first)
    ok(wait(lambda: "egress.connection" in (text("#sb-events") or "")), "the live event log shows it")

    # the chart: samples every 2 s, drawn on the canvas (a little CPU and memory to show)
    api("POST", "/v1/sandboxes/%s/exec" % box, {"background": True, "cmd":
        "python3 -c 'import time; b = bytearray(40 << 20); t = time.time()\nwhile time.time() - t < 4: pass'"})
    time.sleep(4.5)
    painted = js("""const c = document.getElementById('chart'), g = c.getContext('2d');
        const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
        for (let i = 3; i < d.length; i += 4) if (d[i]) n++;
        return n;""")
    ok(painted and painted > 500, "the chart draws (%s painted pixels)" % painted)

    # the terminal
    type_into("#term-cmd", "echo console-term-$((40+2))")
    click("#term-form button")
    ok(wait(lambda: "console-term-42" in (text("#term-out") or "")),
       "the terminal runs echo and shows its output", text("#term-out"))
    ok(wait(lambda: "[exit 0]" in (text("#term-out") or "")), "and its exit", text("#term-out"))
    st, r = api("GET", "/v1/sandboxes/%s/processes" % box)
    ok(wait(lambda: "console-term" in (text("#procs") or "")), "the terminal's command is in the process list",
       "%s\n%s" % (text("#procs"), js_async("""const done = arguments[arguments.length - 1]; const t = Date.now();
        fetch('/v1/sandboxes/' + arguments[0] + '/processes', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('paddock.token')}})
        .then(r => r.text()).then(t2 => done((Date.now() - t) + ' ms ' + t2.slice(0, 200)), e => done(String(e)));""", box)))

    # the shell on a pty: a line typed goes to its stdin, its output comes back
    click("#shell-start")
    ok(wait(lambda: "on a pty" in (text("#shell-state") or "")), "a shell on a pty opens", text("#shell-state"))
    type_into("#term-cmd", "echo pty-$((6*7)); tty")
    click("#term-form button")
    ok(wait(lambda: "pty-42" in (text("#term-out") or "")), "the shell runs echo and shows its output",
       text("#term-out"))
    ok(wait(lambda: "/dev/pts/" in (text("#term-out") or "")), "on a terminal (tty)", text("#term-out"))
    out_text = text("#term-out") or ""
    ok("\x1b" not in out_text, "no control sequences reach the page")
    click("#shell-stop")

    def shells_running():
        st, r = api("GET", "/v1/sandboxes/%s/processes" % box)
        return [p for p in (r or {}).get("processes", []) if p["argv"][:2] == ["/bin/sh", "-i"] and p["state"] == "running"]
    ok(wait(lambda: not shells_running()), "closing the shell ends it", shells_running())


    # files: list /workspace after writing one
    api("POST", "/v1/sandboxes/%s/exec" % box, {"cmd": "echo hi > /workspace/note.txt"})
    click("#files-form button")
    ok(wait(lambda: "note.txt" in (text("#files") or "")), "the files browser lists /workspace",
       "%s\n%s\n%s\n%s" % (text("#files"), text("#status"), tcp_conns(), js("return performance.getEntriesByType('resource').slice(-12).map(e => e.name.replace(/^.*\\/v1/, '') + ' ' + Math.round(e.startTime) + ' ' + Math.round(e.duration)).join('\\n')")))

    # extend the TTL from the page
    type_into("#ttl-s", "900")
    click("#ttl-form button")
    ok(wait(lambda: "expires at" in (text("#status") or "")), "the TTL is extended from the page", text("#status"))
    st, b = api("GET", "/v1/sandboxes/" + box)
    ok(st == 200 and b["ttl_s"] == 900, "the API says ttl_s 900", b and b.get("ttl_s"))
    wd("POST", S + "/window/rect", {"width": 1280, "height": 2000})
    time.sleep(2.5)  # one more sample on the chart at this size
    screenshot("console-sandbox.png")
    wd("POST", S + "/window/rect", {"width": 1280, "height": 1000})

    entries = logs()
    bad = [e for e in entries if e.get("level") == "SEVERE" and
           not any(x in e.get("message", "") for x in expected_errors)]
    ok(not bad, "no console errors so far (%d log entries)" % len(entries), json.dumps(bad, indent=1))

    # ---- events page ---------------------------------------------------------------------
    go(base + "/ui#/events")
    ok(wait(lambda: js("return !document.getElementById('events').hidden")), "the events page opens")
    api("POST", "/v1/sandboxes/%s/exec" % box, {"cmd": "true"})
    ok(wait(lambda: "exec.exited" in (text("#ev-list") or "")), "live events show", text("#ev-list"))
    type_into("#ev-kind", "exec.started")
    ok(wait(lambda: "exec.exited" not in (text("#ev-list") or "") and "exec.started" in (text("#ev-list") or "")),
       "the kind filter keeps only exec.started", text("#ev-list"))

    go(base + "/ui#/")
    wait(lambda: js("return !document.getElementById('overview').hidden"))
    ok(wait(lambda: "/ 1" in (text('#sb-table tr[data-id="%s"]' % box) or "")),
       "the overview counts the denied connection", "%s\n%s\n%s" % (text('#sb-table tr[data-id="%s"]' % box), tcp_conns(),
       js_async("""const done = arguments[arguments.length - 1]; const t = Date.now();
        setTimeout(() => done('timeout'), 5000);
        fetch('/v1/sandboxes/' + arguments[0] + '/network', {headers: {Authorization: 'Bearer ' + sessionStorage.getItem('paddock.token')}})
        .then(r => r.text()).then(t2 => done((Date.now() - t) + ' ms ' + t2.slice(0, 300)), e => done(String(e)));""", box)))
    time.sleep(1)
    screenshot("console-overview.png")

    # ---- actions need the token ----------------------------------------------------------
    r = js_async("""const done = arguments[arguments.length - 1];
        fetch('/v1/sandboxes/' + arguments[0], {method: 'DELETE'}).then(r => done(r.status), e => done(String(e)));""", box)
    ok(r == 401, "DELETE from the page without the token: 401", r)
    r = js_async("""const done = arguments[arguments.length - 1];
        fetch('/v1/sandboxes/' + arguments[0] + '/ttl', {method: 'POST', body: '{"ttl_s":5}',
          headers: {Authorization: 'Bearer wrong-token-wrong-token'}}).then(r => done(r.status), e => done(String(e)));""", box)
    ok(r == 401, "extend TTL with a wrong token: 401", r)
    st, _ = api("GET", "/v1/sandboxes/" + box)
    ok(st == 200, "the sandbox is still there")

    # ---- delete from the page (behind a confirmation) ---------------------------------------
    go(base + "/ui#/sandbox/" + box)
    wait(lambda: js("return !document.getElementById('sandbox').hidden"))
    click("#delete")
    wait(lambda: wd("GET", S + "/alert/text"), timeout=5)
    wd("POST", S + "/alert/accept")
    ok(wait(lambda: api("GET", "/v1/sandboxes/" + box)[0] == 404), "delete from the page (confirmed) removes it")
    box = None
    ok(wait(lambda: js("return location.hash") in ("#/", "")), "and goes back to the overview")

    # ---- phone width ----------------------------------------------------------------------
    wd("POST", S + "/window/rect", {"width": 390, "height": 844})
    go(base + "/ui#/")
    wait(lambda: js("return !document.getElementById('overview').hidden"))
    over = js("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
    ok(over is not None and over <= 1, "no sideways scrolling of the page at 390 px (%s px)" % over)
finally:
    for b in (box, extra and extra.get("id")):
        if b:
            api("DELETE", "/v1/sandboxes/" + b)
    if bob_box:
        api("DELETE", "/v1/sandboxes/" + bob_box, token=bob)
    try:
        wd("DELETE", S)
    except Exception:  # noqa: BLE001
        pass
    drv.terminate()
    drv.wait()
sys.exit(1 if failed else 0)

/*
 * The console's views: overview (#/), one sandbox (#/sandbox/ID), events (#/events).
 * Everything shown comes from the API with the user's token (api.js); every string from a
 * sandbox is hostile and reaches the DOM through textContent only.
 */
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
	boxes: new Map(),   /* id -> sandbox object, plus .egress {allow, deny} */
	view: null,
	feed: null,         /* GET /v1/events follower */
	page: null,         /* what the sandbox page holds open */
	events: [],         /* the events page's (bounded) */
	listeners: [],      /* callbacks for every live event */
};
const EVENTS_KEPT = 5000, LOG_ROWS = 500;

function status(msg, bad) {
	const s = $("status");
	s.textContent = msg || "";
	s.className = "status" + (bad ? " error" : "");
}

function show(id) {
	for (const s of ["login", "overview", "sandbox", "events"])
		$(s).hidden = s !== id;
}

/* ---- sign-in: try the API as we are (unix socket forwarded: no token needed), else ask */
async function start() {
	try {
		/* who this token is (null: none or wrong), without a 401 for the browser to log */
		const s = await PD.request("GET", "/ui/session");
		if (!s || !s.tenant) {
			show("login");
			$("token").focus();
			if (PD.token)
				$("login-error").textContent = "paddockd does not know that token.";
			return;
		}
		state.tenant = s.tenant;
		const r = await PD.request("GET", "/v1/sandboxes");
		signedIn(r.sandboxes || []);
	} catch (e) {
		status("paddockd: " + e.message, true);
	}
}

$("login-form").addEventListener("submit", (ev) => {
	ev.preventDefault();
	PD.setToken($("token").value.trim());
	$("token").value = "";
	start();
});

$("logout").addEventListener("click", () => {
	PD.setToken("");
	feedOff();
	location.hash = "#/";
	location.reload();
});

function signedIn(list) {
	const first = !state.started;
	state.started = true;
	state.boxes.clear();
	for (const b of list)
		state.boxes.set(b.id, Object.assign(b, { egress: { allow: 0, deny: 0 } }));
	$("logout").hidden = !PD.token;
	$("who").textContent = state.tenant === "local" ? "local operator" : "tenant " + state.tenant;
	route(); /* starts the feed, unless a sandbox's page needs no feed */
	if (first) {
		setInterval(refreshUsage, 5000);
		setInterval(() => { if (state.view === "overview") renderOverview(); }, 1000);
	}
}

/*
 * A browser opens at most 6 HTTP/1.1 connections to a server, and each followed stream holds
 * one: the daemon-wide feed runs on the overview and events pages only (a sandbox's page
 * follows that sandbox's own events), and is reloaded when it starts again.
 */
function feedOn() {
	if (state.feed)
		return;
	state.feed = PD.follow("/v1/events?follow=1", onEvent, reloadBoxes, (e) => {
		status("event stream: " + e.message + "; reconnecting", true);
	});
	/* what happened while it was off */
	reloadBoxes().then(loadEgressCounts);
}

function feedOff() {
	if (state.feed)
		state.feed.stop();
	state.feed = null;
}

/* ---- live state from the event stream ---------------------------------------------- */
function onEvent(e) {
	const id = e.sandbox;
	if (e.event === "sandbox.created" || e.event === "sandbox.claimed") {
		PD.request("GET", "/v1/sandboxes/" + encodeURIComponent(id)).then((b) => {
			const old = state.boxes.get(b.id);
			state.boxes.set(b.id, Object.assign(b, { egress: old ? old.egress : { allow: 0, deny: 0 } }));
			if (state.view === "overview")
				renderOverview();
		}).catch(() => {});
	} else if (e.event === "sandbox.removed" || e.event === "sandbox.destroyed") {
		state.boxes.delete(id);
	} else if (e.event === "egress.connection" && state.boxes.has(id)) {
		state.boxes.get(id).egress[e.decision === "allow" ? "allow" : "deny"]++;
	} else if ((e.event === "exec.started" || e.event === "exec.exited") && state.boxes.has(id)) {
		const b = state.boxes.get(id);
		b.usage.processes = Math.max(0, (b.usage.processes || 0) + (e.event === "exec.started" ? 1 : -1));
	}
	for (const f of state.listeners)
		f(e);
	if (state.view === "overview")
		renderOverview();
}

async function reloadBoxes() {
	try {
		const r = await PD.request("GET", "/v1/sandboxes");
		const fresh = new Map();
		for (const b of r.sandboxes || []) {
			const old = state.boxes.get(b.id);
			fresh.set(b.id, Object.assign(b, { egress: old ? old.egress : { allow: 0, deny: 0 } }));
		}
		state.boxes = fresh;
		status("");
		if (state.view === "overview")
			renderOverview();
	} catch (e) {
		status("paddockd: " + e.message, true);
	}
}

/* usage (memory, CPU) is not in the events: one list request every few seconds */
function refreshUsage() {
	if (document.hidden || state.view !== "overview")
		return;
	reloadBoxes();
	loadHost();
}

/* egress counts so far, once per sandbox; the event stream keeps them from then on */
function loadEgressCounts() {
	for (const id of state.boxes.keys()) {
		PD.request("GET", "/v1/sandboxes/" + id + "/network").then((n) => {
			const b = state.boxes.get(id);
			if (b && n.stats)
				b.egress = { allow: n.stats.connections_allowed || 0, deny: n.stats.connections_denied || 0 };
			if (state.view === "overview")
				renderOverview();
		}).catch(() => {});
	}
}

/* ---- overview ------------------------------------------------------------------------- */
function renderOverview() {
	const tb = $("sb-table").tBodies[0], now = Date.now();
	const rows = [];
	const list = [...state.boxes.values()].sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
	for (const b of list) {
		const tr = document.createElement("tr");
		tr.dataset.id = b.id;
		const td = document.createElement("td");
		const a = PD.el("a", b.id);
		a.href = "#/sandbox/" + encodeURIComponent(b.id);
		td.appendChild(a);
		tr.appendChild(td);
		tr.appendChild(PD.el("td", b.tenant || "–"));
		tr.appendChild(PD.el("td", b.spec && b.spec.image ? b.spec.image : "host /usr"));
		tr.appendChild(PD.el("td", PD.duration((now - Date.parse(b.created_at)) / 1000)));
		tr.appendChild(PD.el("td", PD.duration((Date.parse(b.expires_at) - now) / 1000)));
		tr.appendChild(PD.el("td", b.state, b.state === "running" ? "ok" : "bad"));
		const u = b.usage || {};
		tr.appendChild(PD.el("td", (u.cpu_s || 0).toFixed(2) + " s"));
		const lim = memLimit(b);
		const mtd = PD.el("td", PD.bytes(u.memory_bytes) + (lim ? " / " + PD.bytes(lim) : ""));
		if (lim) {
			const m = document.createElement("meter");
			m.min = 0;
			m.max = lim;
			m.value = u.memory_bytes || 0;
			m.setAttribute("aria-label", "memory of " + b.id);
			mtd.append(" ", m);
		}
		tr.appendChild(mtd);
		tr.appendChild(PD.el("td", u.processes || 0));
		const e = b.egress || { allow: 0, deny: 0 };
		const etd = PD.el("td");
		etd.append(PD.el("span", e.allow, "ok"), " / ", PD.el("span", e.deny, e.deny ? "bad" : ""));
		tr.appendChild(etd);
		rows.push(tr);
	}
	tb.replaceChildren(...rows);
	$("sb-count").textContent = "(" + rows.length + ")";
	$("sb-empty").hidden = rows.length > 0;
}

function memLimit(b) {
	const l = b.spec && b.spec.limits ? b.spec.limits.memory : null;
	if (typeof l === "number")
		return l;
	if (typeof l === "string") {
		const m = /^(\d+(?:\.\d+)?)([KMGT]?)i?B?$/i.exec(l);
		if (m)
			return parseFloat(m[1]) * Math.pow(1024, " KMGT".indexOf((m[2] || " ").toUpperCase()));
	}
	return 0;
}

/* Prometheus text: the sum of each series' samples, by name (labels folded) */
function metricSums(text) {
	const m = new Map();
	for (const line of text.split("\n")) {
		const r = /^([a-z_]+)(?:\{[^}]*\})? ([0-9.eE+-]+)$/.exec(line);
		if (r)
			m.set(r[1], (m.get(r[1]) || 0) + Number(r[2]));
	}
	return m;
}

async function loadHost() {
	const dl = $("host");
	try {
		const h = await PD.request("GET", "/healthz");
		const rows = [["paddockd", h.status], ["sandboxes (all tenants)", h.sandboxes]];
		const res = await PD.request("GET", "/metrics", undefined, { raw: true });
		const m = metricSums(await res.text());
		if (m.has("paddock_pool_ready"))
			rows.push(["warm pool ready", m.get("paddock_pool_ready")],
				["pool hits / misses", (m.get("paddock_pool_hits_total") || 0) + " / " +
					(m.get("paddock_pool_misses_total") || 0)]);
		else
			rows.push(["warm pool", "off"]);
		rows.push(["sandboxes created", m.get("paddock_sandboxes_created_total") || 0],
			["HTTP connections open", m.get("paddock_http_connections_open") || 0]);
		dl.replaceChildren(...rows.flatMap(([k, v]) => [PD.el("dt", k), PD.el("dd", v)]));
	} catch (e) {
		dl.replaceChildren(PD.el("dt", "paddockd"), PD.el("dd", e.message));
	}
}

/* ---- router ------------------------------------------------------------------------- */
function route() {
	const h = location.hash || "#/";
	if (state.page) {
		state.page.close();
		state.page = null;
	}
	state.listeners = state.listeners.filter((f) => f.keep);
	let m;
	if ((m = /^#\/sandbox\/(sb_[a-z2-9]{12})$/.exec(h))) {
		state.view = "sandbox";
		show("sandbox");
		feedOff();
		state.page = openSandbox(m[1]);
	} else if (h === "#/events") {
		state.view = "events";
		show("events");
		feedOn();
		renderEvents();
	} else {
		state.view = "overview";
		show("overview");
		feedOn();
		renderOverview();
		loadHost();
	}
	$("main").focus({ preventScroll: true });
}
window.addEventListener("hashchange", route);

/* ---- one sandbox -------------------------------------------------------------------- */
function openSandbox(id) {
	const base = "/v1/sandboxes/" + id;
	const closers = [];
	const chart = new PD.Chart($("chart"));
	const egress = [], secrets = [], seccomp = [];
	let lastCpu = null, spec = null, lastExecs = -1;
	$("sb-id").textContent = id;
	for (const t of ["procs", "egress", "secrets", "seccomp", "files"])
		$(t).tBodies[0].replaceChildren();
	$("sb-events").replaceChildren();
	$("term-out").textContent = "";
	$("asks").replaceChildren();
	chart.draw();

	async function loadBox() {
		try {
			const b = await PD.request("GET", base);
			$("sb-state").textContent = b.state;
			const facts = [["tenant", b.tenant], ["created", b.created_at], ["expires", b.expires_at],
				["TTL", b.ttl_s + " s"], ["idle timeout", b.idle_timeout_s ? b.idle_timeout_s + " s" : "none"],
				["memory", PD.bytes(b.usage.memory_bytes) + " (peak " + PD.bytes(b.usage.memory_peak_bytes) + ")"],
				["CPU", b.usage.cpu_s.toFixed(2) + " s"], ["pids", b.usage.pids], ["execs", b.usage.execs]];
			$("sb-facts").replaceChildren(...facts.flatMap(([k, v]) => [PD.el("dt", k), PD.el("dd", v)]));
			if (!spec) {
				spec = b.spec;
				$("sb-spec").textContent = JSON.stringify(b.spec, null, 2);
				chart.limit = memLimit(b);
			}
			/* a command the event log has not told of yet (the streams race): list again */
			if (b.usage.execs !== lastExecs) {
				lastExecs = b.usage.execs;
				loadProcs();
			}
			const now = Date.now();
			const cpu = lastCpu ? Math.max(0, (b.usage.cpu_s - lastCpu.v) / ((now - lastCpu.t) / 1000) * 100) : 0;
			lastCpu = { v: b.usage.cpu_s, t: now };
			chart.add({ t: now, mem: b.usage.memory_bytes, cpu });
		} catch (e) {
			status(e.status === 404 ? "sandbox " + id + " is gone" : e.message, true);
		}
	}

	async function loadProcs() {
		try {
			const r = await PD.request("GET", base + "/processes");
			const rows = (r.processes || []).slice().reverse().map((p) => {
				const res = p.result || {};
				const tr = document.createElement("tr");
				tr.append(PD.el("td", p.pid), PD.el("td", (p.argv || []).join(" "), "cmd"),
					PD.el("td", p.state, p.state === "running" ? "ok" : ""),
					PD.el("td", res.signal ? "signal " + res.signal : res.exit_code ?? "–"),
					PD.el("td", res.reason || "–", res.reason && res.reason !== "exited" ? "bad" : ""),
					PD.el("td", typeof res.wall_s === "number" ? res.wall_s.toFixed(3) : "–"),
					PD.el("td", typeof res.cpu_user_s === "number" ?
						(res.cpu_user_s + (res.cpu_sys_s || 0)).toFixed(3) : "–"),
					PD.el("td", PD.bytes(res.peak_rss_bytes)));
				return tr;
			});
			$("procs").tBodies[0].replaceChildren(...rows);
		} catch (e) { /* the sandbox went: loadBox says so */ }
	}

	async function loadNetwork() {
		try {
			const n = await PD.request("GET", base + "/network");
			$("net-json").value = JSON.stringify(n.network, null, 2);
			followAsks(n.network && n.network.unlisted === "ask");
		} catch (e) {
			$("net-json").value = "";
		}
	}

	function addLog(e) {
		const ol = $("sb-events");
		ol.appendChild(PD.el("li", JSON.stringify(e)));
		while (ol.children.length > LOG_ROWS)
			ol.firstChild.remove();
	}

	function renderTables() {
		/* denials first, then newest first */
		const eg = egress.slice().sort((a, b) => (a.decision === "allow") - (b.decision === "allow") ||
			(a.ts < b.ts ? 1 : -1));
		$("egress").tBodies[0].replaceChildren(...eg.map((e) => {
			const tr = document.createElement("tr");
			tr.append(PD.el("td", e.decision, e.decision === "allow" ? "ok" : "bad"), PD.el("td", e.host),
				PD.el("td", e.port), PD.el("td", e.rule || "–"), PD.el("td", e.reason || "–"),
				PD.el("td", (e.bytes_out || 0) + " / " + (e.bytes_in || 0)), PD.el("td", e.duration_ms ?? "–"),
				PD.el("td", e.ts));
			return tr;
		}));
		$("secrets").tBodies[0].replaceChildren(...secrets.map((e) => {
			const tr = document.createElement("tr");
			tr.append(PD.el("td", e.secret), PD.el("td", e.host), PD.el("td", e.where), PD.el("td", e.ts));
			return tr;
		}));
		$("seccomp").tBodies[0].replaceChildren(...seccomp.map((e) => {
			const tr = document.createElement("tr");
			tr.append(PD.el("td", e.syscall), PD.el("td", e.command), PD.el("td", e.pid),
				PD.el("td", e.total), PD.el("td", e.ts));
			return tr;
		}));
	}

	let procTimer = null;
	function onSbEvent(e) {
		addLog(e);
		if (e.event === "egress.connection")
			egress.push(e);
		else if (e.event === "secret.used")
			secrets.push(e); /* names and hosts: the value never leaves the proxy */
		else if (e.event === "seccomp.denied")
			seccomp.push(e);
		else if (e.event === "exec.started" || e.event === "exec.exited") {
			clearTimeout(procTimer);
			procTimer = setTimeout(loadProcs, 100);
		} else if (e.event === "egress.policy")
			loadNetwork();
		if (egress.length > 2000)
			egress.shift();
		renderTables();
	}

	/* the sandbox's stored events, then live ones */
	const evs = PD.follow(base + "/events?follow=1", onSbEvent, () => {
		egress.length = secrets.length = seccomp.length = 0;
		$("sb-events").replaceChildren();
	}, (e) => e.status !== 404);
	closers.push(() => evs.stop());

	/* pending ask decisions */
	const asks = new Map();
	function renderAsks() {
		const ul = $("asks");
		ul.replaceChildren(...[...asks.values()].map((a) => {
			const li = PD.el("li");
			li.append(PD.el("span", a.host + ":" + a.port + " (" + (a.via || "") + ")"));
			for (const ans of ["allow_once", "allow_always", "deny"]) {
				const btn = PD.el("button", ans.replace("_", " "));
				btn.type = "button";
				btn.addEventListener("click", async () => {
					try {
						await PD.request("POST", base + "/network/decisions", { id: a.id, answer: ans, who: "console" });
						asks.delete(a.id);
						renderAsks();
					} catch (e) {
						status("answer: " + e.message, true);
					}
				});
				li.appendChild(btn);
			}
			return li;
		}));
		$("asks-empty").hidden = asks.size > 0;
	}
	/* followed only while the policy asks (a stream held open costs one of 6 connections) */
	let askFeed = null;
	function followAsks(on) {
		if (on && !askFeed) {
			askFeed = PD.follow(base + "/network/pending?follow=1", (a) => {
				if (a.id !== undefined && !a.answer)
					asks.set(a.id, a);
				else if (a.id !== undefined)
					asks.delete(a.id);
				renderAsks();
			}, () => asks.clear(), (e) => e.status !== 409 && e.status !== 404);
		} else if (!on && askFeed) {
			askFeed.stop();
			askFeed = null;
			asks.clear();
		}
		renderAsks();
	}
	closers.push(() => followAsks(false));
	renderAsks();

	loadBox();
	loadProcs();
	loadNetwork();
	listFiles();
	const t = setInterval(() => { if (!document.hidden) loadBox(); }, 2000);
	closers.push(() => clearInterval(t));
	const pg = { id, base, refresh: loadProcs, shell: null, closeShell: null,
		close() {
			if (pg.closeShell)
				pg.closeShell();
			for (const c of closers)
				c();
		} };
	$("shell-start").hidden = false;
	$("shell-stop").hidden = true;
	return pg;
}

/* ---- sandbox actions ------------------------------------------------------------------ */
function page() {
	return state.page;
}

$("ttl-form").addEventListener("submit", async (ev) => {
	ev.preventDefault();
	const p = page();
	try {
		const b = await PD.request("POST", p.base + "/ttl", { ttl_s: Number($("ttl-s").value) });
		status("expires at " + b.expires_at);
	} catch (e) {
		status("extend TTL: " + e.message, true);
	}
});

$("delete").addEventListener("click", async () => {
	const p = page();
	if (!confirm("Delete " + p.id + "? Every process in it is killed and its files are gone."))
		return;
	try {
		await PD.request("DELETE", p.base);
		status(p.id + " deleted");
		location.hash = "#/";
	} catch (e) {
		status("delete: " + e.message, true);
	}
});

$("net-form").addEventListener("submit", async (ev) => {
	ev.preventDefault();
	const p = page();
	let body;
	try {
		body = JSON.parse($("net-json").value);
	} catch (e) {
		status("network policy: expected a JSON object: " + e.message, true);
		return;
	}
	try {
		const r = await PD.request("PUT", p.base + "/network", body);
		status("policy applied; connections closed: " + (r.connections_closed || 0));
	} catch (e) {
		status("network policy: " + e.message, true);
	}
});

/*
 * The shell: a background /bin/sh -i on a pty with stdin kept open; its output is followed
 * and each line typed is written to its stdin (the pty echoes it). The output is a
 * terminal's: control sequences are dropped, as a line printer would show it.
 */
function terminalText(s) {
	return s.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, "")   /* OSC: titles */
		.replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "")            /* CSI: colours, modes */
		.replace(/\x1b[()][A-Za-z0-9]|\x1b[=>78]/g, "")
		.replace(/\r\n/g, "\n").replace(/\r/g, "")
		.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
}

async function startShell() {
	const p = page(), out = $("term-out");
	try {
		const proc = await PD.request("POST", p.base + "/exec", {
			argv: ["/bin/sh", "-i"], background: true, keep_stdin: true, timeout_s: 0,
			pty: { rows: 24, cols: 100 }, env: { TERM: "dumb", PS1: "$ " } });
		const ctl = new AbortController();
		p.shell = { pid: proc.pid, ctl };
		$("shell-start").hidden = true;
		$("shell-stop").hidden = false;
		$("shell-state").textContent = "Shell " + proc.pid + " on a pty: lines go to its input.";
		p.closeShell = () => stopShell(true);
		PD.stream("GET", p.base + "/processes/" + proc.pid + "/output?follow=1", undefined, (o) => {
			if (o.type === "stdout" || o.type === "stderr") {
				out.append(terminalText(o.data !== undefined ? o.data : ""));
				out.scrollTop = out.scrollHeight;
			} else if (o.type === "exit") {
				out.append("[shell ended]\n");
			}
		}, ctl.signal).catch(() => {}).finally(() => {
			if (p.shell && p.shell.pid === proc.pid)
				stopShell(false);
		});
	} catch (e) {
		out.append("[shell: " + e.message + "]\n");
	}
}

function stopShell(kill) {
	const p = page();
	if (!p || !p.shell)
		return;
	const sh = p.shell;
	p.shell = null;
	if (kill)
		PD.request("POST", p.base + "/processes/" + sh.pid + "/signal", { signal: "KILL" }).catch(() => {});
	sh.ctl.abort();
	$("shell-start").hidden = false;
	$("shell-stop").hidden = true;
	$("shell-state").textContent = "Each line runs on its own with /bin/sh -c.";
}

$("shell-start").addEventListener("click", startShell);
$("shell-stop").addEventListener("click", () => stopShell(true));

$("term-form").addEventListener("submit", async (ev) => {
	ev.preventDefault();
	const p = page(), out = $("term-out"), cmd = $("term-cmd").value;
	if (p.shell) {
		$("term-cmd").value = "";
		try {
			await PD.request("POST", p.base + "/processes/" + p.shell.pid + "/stdin",
				new Blob([cmd + "\n"]));
		} catch (e) {
			out.append("[stdin: " + e.message + "]\n");
		}
		return;
	}
	out.append("$ " + cmd + "\n");
	try {
		await PD.stream("POST", p.base + "/exec", { cmd, stream: true }, (o) => {
			if (o.type === "stdout" || o.type === "stderr")
				out.append(o.data !== undefined ? o.data : "[" + (o.data_b64 || "").length + " base64 chars]");
			else if (o.type === "exit" && o.result)
				out.append("[exit " + (o.result.signal ? "signal " + o.result.signal : o.result.exit_code) +
					(o.result.reason && o.result.reason !== "exited" ? ", " + o.result.reason : "") + "]\n");
		});
	} catch (e) {
		out.append("[error: " + e.message + "]\n");
	}
	out.scrollTop = out.scrollHeight;
	if (p.refresh)
		p.refresh();
});

async function listFiles() {
	const p = page(), dir = $("files-path").value;
	if (!p)
		return;
	status("listing " + dir + " …");
	try {
		const r = await PD.request("GET", p.base + "/files/list?path=" + encodeURIComponent(dir) + "&depth=1");
		status("");
		$("files").tBodies[0].replaceChildren(...(r.entries || []).map((f) => {
			const tr = document.createElement("tr");
			const dl = PD.el("td");
			if (f.type === "file") {
				const b = PD.el("button", "Download");
				b.type = "button";
				b.setAttribute("aria-label", "Download " + f.name);
				b.addEventListener("click", () => download(f.path || dir.replace(/\/$/, "") + "/" + f.name, f.name));
				dl.appendChild(b);
			}
			tr.append(PD.el("td", f.name, "cmd"), PD.el("td", f.type), PD.el("td", PD.bytes(f.size)), dl);
			return tr;
		}));
	} catch (e) {
		$("files").tBodies[0].replaceChildren();
		status("files: " + e.message, true);
	}
}

$("files-form").addEventListener("submit", (ev) => {
	ev.preventDefault();
	listFiles();
});

async function download(path, name) {
	try {
		const res = await PD.request("GET", page().base + "/files?path=" + encodeURIComponent(path), undefined, { raw: true });
		PD.saveBlob(await res.blob(), name.replace(/[\/\\]/g, "_"));
	} catch (e) {
		status("download: " + e.message, true);
	}
}

$("upload-form").addEventListener("submit", async (ev) => {
	ev.preventDefault();
	const f = $("upload-file").files[0], dir = $("files-path").value.replace(/\/$/, "");
	if (!f)
		return;
	const dest = dir + "/" + f.name;
	if (!confirm("Upload " + f.name + " (" + PD.bytes(f.size) + ") to " + dest + " in " + page().id + "?"))
		return;
	try {
		await PD.request("PUT", page().base + "/files?path=" + encodeURIComponent(dest), f);
		status("uploaded " + dest);
		listFiles();
	} catch (e) {
		status("upload: " + e.message, true);
	}
});

/* ---- events page ----------------------------------------------------------------------- */
function eventListener(e) {
	state.events.push(e);
	if (state.events.length > EVENTS_KEPT)
		state.events.shift();
	if (state.view === "events" && matches(e)) {
		const ol = $("ev-list");
		ol.appendChild(PD.el("li", JSON.stringify(e)));
		while (ol.children.length > LOG_ROWS)
			ol.firstChild.remove();
	}
}
eventListener.keep = true;
state.listeners.push(eventListener);

function matches(e) {
	const sb = $("ev-sandbox").value.trim(), kind = $("ev-kind").value.trim(), dec = $("ev-decision").value;
	return (!sb || e.sandbox === sb) && (!kind || String(e.event).startsWith(kind)) &&
		(!dec || e.decision === dec || e.answer === dec || (dec === "allow" && String(e.answer).startsWith("allow")));
}

function renderEvents() {
	const list = state.events.filter(matches).slice(-LOG_ROWS);
	$("ev-list").replaceChildren(...list.map((e) => PD.el("li", JSON.stringify(e))));
}

for (const id of ["ev-sandbox", "ev-kind", "ev-decision"])
	$(id).addEventListener("input", renderEvents);
$("ev-filter").addEventListener("submit", (ev) => ev.preventDefault());
$("ev-export").addEventListener("click", () => {
	const lines = state.events.filter(matches).map((e) => JSON.stringify(e) + "\n");
	PD.saveBlob(new Blob(lines, { type: "application/x-ndjson" }), "paddock-events.jsonl");
});

start();

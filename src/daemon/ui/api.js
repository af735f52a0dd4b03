/*
 * The console's one way to paddockd's API: fetch() with the tenant's bearer token in the
 * Authorization header (never in an address, never in a cookie: a page of another site
 * cannot make the browser send it, which is what keeps the actions safe from CSRF), and
 * NDJSON streams read line by line. The token lives in this tab's sessionStorage only.
 */
"use strict";

const PD = window.PD = {};

PD.token = sessionStorage.getItem("paddock.token") || "";

PD.setToken = function (t) {
	PD.token = t;
	if (t)
		sessionStorage.setItem("paddock.token", t);
	else
		sessionStorage.removeItem("paddock.token");
};

PD.ApiError = class extends Error {
	constructor(status, body) {
		const e = body && body.error ? body.error : {};
		super(e.message ? e.message + (e.field ? " (" + e.field + ")" : "") : "HTTP " + status);
		this.status = status;
		this.code = e.code || "";
	}
};

function headers(extra) {
	const h = Object.assign({}, extra || {});
	if (PD.token)
		h.Authorization = "Bearer " + PD.token;
	return h;
}

/* method, path, optional JSON body (or a Blob for raw bytes); resolves to the parsed answer */
PD.request = async function (method, path, body, opts) {
	const init = { method, headers: headers(), cache: "no-store", signal: opts && opts.signal };
	if (body instanceof Blob) {
		init.body = body;
		init.headers["Content-Type"] = "application/octet-stream";
	} else if (body !== undefined) {
		init.body = JSON.stringify(body);
		init.headers["Content-Type"] = "application/json";
	}
	const res = await fetch(path, init);
	if (opts && opts.raw && res.ok)
		return res;
	const text = await res.text();
	let data = null;
	try {
		data = text ? JSON.parse(text) : null;
	} catch (e) {
		data = null;
	}
	if (!res.ok)
		throw new PD.ApiError(res.status, data);
	return data;
};

/*
 * An NDJSON stream: onLine(object) for each line until the server ends it or signal aborts.
 * Resolves when it ended; rejects with PD.ApiError when it could not start.
 */
PD.stream = async function (method, path, body, onLine, signal) {
	const init = { method, headers: headers(), cache: "no-store", signal };
	if (body !== undefined) {
		init.body = JSON.stringify(body);
		init.headers["Content-Type"] = "application/json";
	}
	const res = await fetch(path, init);
	if (!res.ok) {
		let data = null;
		try {
			data = await res.json();
		} catch (e) {
			data = null;
		}
		throw new PD.ApiError(res.status, data);
	}
	const reader = res.body.getReader();
	const dec = new TextDecoder();
	let buf = "";
	for (;;) {
		const { value, done } = await reader.read();
		if (done)
			break;
		buf += dec.decode(value, { stream: true });
		let nl;
		while ((nl = buf.indexOf("\n")) >= 0) {
			const line = buf.slice(0, nl);
			buf = buf.slice(nl + 1);
			if (!line.trim())
				continue;
			let o;
			try {
				o = JSON.parse(line);
			} catch (e) {
				continue; /* not a line of ours: skipped, never shown as markup */
			}
			onLine(o);
		}
	}
};

/*
 * A stream kept open: when it ends or breaks (paddockd closed a reader that fell behind, or
 * restarted) it is opened again after a pause that grows, and onReset() lets the caller
 * reload what it may have missed. stop() ends it.
 */
PD.follow = function (path, onLine, onReset, onError) {
	let ctl = null, stopped = false, delay = 500;
	async function run() {
		while (!stopped) {
			ctl = new AbortController();
			try {
				await PD.stream("GET", path, undefined, (o) => {
					delay = 500;
					onLine(o);
				}, ctl.signal);
			} catch (e) {
				if (stopped)
					return;
				if (onError && onError(e) === false)
					return;
			}
			if (stopped)
				return;
			await new Promise((r) => setTimeout(r, delay));
			delay = Math.min(delay * 2, 10000);
			if (onReset)
				onReset();
		}
	}
	run();
	return { stop() { stopped = true; if (ctl) ctl.abort(); } };
};

/* text helpers: everything from a sandbox goes into the DOM as text, never as markup */
PD.el = function (tag, text, cls) {
	const e = document.createElement(tag);
	if (text !== undefined && text !== null)
		e.textContent = String(text);
	if (cls)
		e.className = cls;
	return e;
};

PD.bytes = function (n) {
	if (n === undefined || n === null || isNaN(n))
		return "–";
	const u = ["B", "KiB", "MiB", "GiB", "TiB"];
	let i = 0;
	while (n >= 1024 && i < u.length - 1) {
		n /= 1024;
		i++;
	}
	return (i ? n.toFixed(1) : String(n)) + " " + u[i];
};

PD.duration = function (s) {
	if (s === undefined || s === null || isNaN(s))
		return "–";
	s = Math.max(0, Math.round(s));
	if (s < 60)
		return s + " s";
	if (s < 3600)
		return Math.floor(s / 60) + " min " + (s % 60) + " s";
	return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
};

/* a download of bytes the page holds (an export, a file it fetched with the token) */
PD.saveBlob = function (blob, name) {
	const a = document.createElement("a");
	a.href = URL.createObjectURL(blob);
	a.download = name;
	document.body.appendChild(a);
	a.click();
	setTimeout(() => {
		URL.revokeObjectURL(a.href);
		a.remove();
	}, 1000);
};

/*
 * A small time chart on a <canvas>, drawn here: memory as a line (scaled to the highest
 * sample; the limit is named), CPU use as bars (percent of one core). No library: two series do not
 * need one, and the page stays a few kilobytes with nothing from elsewhere.
 */
"use strict";

PD.Chart = class {
	constructor(canvas, max) {
		this.c = canvas;
		this.max = max || 150;
		this.points = []; /* {t, mem, cpu} */
	}

	add(p) {
		this.points.push(p);
		if (this.points.length > this.max)
			this.points.shift();
		this.draw();
	}

	draw() {
		const c = this.c, g = c.getContext("2d");
		const css = getComputedStyle(document.body);
		const fg = css.color, W = c.width, H = c.height, pad = 28;
		g.clearRect(0, 0, W, H);
		g.strokeStyle = fg;
		g.globalAlpha = 0.4;
		g.strokeRect(pad, 4, W - pad - 4, H - pad);
		g.globalAlpha = 1;
		const n = this.points.length;
		/* scaled to what was used (a 512 KiB sandbox under a 1 GiB limit is still visible) */
		const memMax = Math.max(1, ...this.points.map((p) => (p.mem || 0) * 1.25));
		const step = (W - pad - 8) / Math.max(1, this.max - 1);
		const y = (v) => 4 + (H - pad) * (1 - v);
		/* CPU bars */
		g.fillStyle = "#3d8bfd";
		for (let i = 0; i < n; i++) {
			const v = Math.min(1, (this.points[i].cpu || 0) / 100);
			const h = (H - pad) * v;
			g.fillRect(pad + 2 + i * step, 4 + (H - pad) - h, Math.max(1, step - 1), h);
		}
		/* memory line */
		g.strokeStyle = "#e8710a";
		g.lineWidth = 2;
		g.beginPath();
		for (let i = 0; i < n; i++) {
			const px = pad + 2 + i * step, py = y((this.points[i].mem || 0) / memMax);
			if (i === 0)
				g.moveTo(px, py);
			else
				g.lineTo(px, py);
		}
		g.stroke();
		g.fillStyle = fg;
		g.font = "11px sans-serif";
		g.fillText("mem " + PD.bytes(memMax) + (this.limit ? " (limit " + PD.bytes(this.limit) + ")" : ""),
			pad + 4, 16);
		const last = n ? this.points[n - 1] : null;
		g.fillText(last ? "cpu " + (last.cpu || 0).toFixed(0) + "%  mem " + PD.bytes(last.mem) :
			"waiting for samples", pad + 4, H - 8);
	}
};

// Read in the page by test/report-geometry.ts (injected as a classic script): what a report draws,
// measured as Chromium renders it. Plain JS so the TypeScript build needs no DOM types.
globalThis.tailgateGeometry = {
  overflowProblems() {
    const problems = [];
    for (const w of document.querySelectorAll('.table-wrap')) {
      if (w.scrollWidth > w.clientWidth + 1) problems.push(`table "${w.querySelector('th')?.textContent ?? ''}..." overflows its card by ${w.scrollWidth - w.clientWidth} px`);
    }
    for (const svg of document.querySelectorAll('svg.chart')) {
      const id = svg.getAttribute('data-chart-id');
      const card = svg.closest('section').getBoundingClientRect();
      const box = svg.getBoundingClientRect();
      if (box.right > card.right + 1 || box.left < card.left - 1) problems.push(`${id}: the chart is wider than its card`);
      const vb = svg.viewBox.baseVal;
      for (const el of svg.querySelectorAll('.chart-title, .legend-item, .limit-label, .facet-title, .band-note, .band-label, .marker-label, text.tick, .axis-label')) {
        if (el.transform?.baseVal?.numberOfItems > 0) continue; // the rotated y-axis label
        const b = el.getBBox();
        if (b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5) {
          problems.push(`${id}: ${el.getAttribute('class')} "${el.textContent}" runs outside the chart`);
        }
      }
    }
    return problems;
  },

  drawnSeries(id) {
    const svg = document.querySelector(`svg.chart[data-chart-id="${id}"]`);
    if (!svg) return [];
    return Array.from(svg.querySelectorAll('path.series')).map((p) => {
      const plot = (p.closest('g.facet') ?? svg).querySelector('rect.plot').getBBox();
      const b = p.getBBox();
      const style = getComputedStyle(p);
      return {
        name: p.getAttribute('data-series') ?? '',
        length: p.getTotalLength(),
        box: { x: b.x, y: b.y, width: b.width, height: b.height },
        stroke: style.visibility === 'hidden' || style.opacity === '0' ? 'none' : style.stroke,
        plot: { x: plot.x, y: plot.y, width: plot.width, height: plot.height },
      };
    });
  },

  readScales(id) {
    const svg = document.querySelector(`svg.chart[data-chart-id="${id}"]`);
    const scope = svg.querySelector('g.facet') ?? svg;
    const plot = scope.querySelector('rect.plot').getBBox();
    const parse = (t) => {
      const m = /^(-?[\d.]+)([kMG]?)$/.exec(t.trim());
      return m ? Number(m[1]) * { '': 1, k: 1e3, M: 1e6, G: 1e9 }[m[2]] : Number.NaN;
    };
    const ticks = (anchor, attr) => Array.from(scope.querySelectorAll(`text.tick[text-anchor="${anchor}"]`)).map((t) => [Number(t.getAttribute(attr)), parse(t.textContent ?? '')]);
    // Linear through the first and last tick: pixel -> value.
    const fit = (pts) => {
      const [p0, v0] = pts[0];
      const [p1, v1] = pts[pts.length - 1];
      return (p) => v0 + ((p - p0) / (p1 - p0)) * (v1 - v0);
    };
    const xAt = fit(ticks('middle', 'x'));
    const yAt = fit(ticks('end', 'y'));
    return {
      xDomain: [xAt(plot.x), xAt(plot.x + plot.width)],
      limits: Array.from(scope.querySelectorAll('line.limit')).map((l) => ({ value: Number(l.getAttribute('data-limit')), drawnAt: yAt(Number(l.getAttribute('y1'))) })),
      bandStarts: Array.from(scope.querySelectorAll('rect.band')).map((r) => xAt(Number(r.getAttribute('x')))),
    };
  },
};

import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';

/** Debian's Chromium (apt-get install chromium); browser tests skip without it, never download one. */
export const CHROMIUM = '/usr/bin/chromium';
export const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing (apt-get install chromium to run this test)`;

/** Launches Debian's Chromium headless, with nothing that reaches the network. */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Opens a report at 1280 px wide; collects console errors into the returned list. */
export async function openReport(browser: Browser, file: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`file://${file}`);
  await page.addScriptTag({ path: fileURLToPath(new URL('./report-geometry.browser.mjs', import.meta.url)) });
  return { page, errors };
}

/**
 * What overflows, as rendered: tables wider than their card, charts wider than theirs, and any
 * chart text (title, legend, limit label, panel title, band note, ticks) outside its chart.
 */
export function overflowProblems(page: Page): Promise<string[]> {
  return page.evaluate('tailgateGeometry.overflowProblems()') as Promise<string[]>;
}

/** One drawn series: its name, rendered length and box, stroke, and the plot rectangle it lives in. */
export interface DrawnSeries {
  name: string;
  length: number;
  box: { x: number; y: number; width: number; height: number };
  stroke: string;
  plot: { x: number; y: number; width: number; height: number };
}

/** The series of a chart as drawn (a faceted chart: the plot is each series' own panel). */
export function drawnSeries(page: Page, chartId: string): Promise<DrawnSeries[]> {
  return page.evaluate(`tailgateGeometry.drawnSeries(${JSON.stringify(chartId)})`) as Promise<DrawnSeries[]>;
}

/**
 * A chart's scales read back from what is drawn (tick labels and their positions), independent
 * of how the chart computed them: x at the first plot's edges, each limit line's value and the
 * value the y ticks put at its drawn height (linear axes), where each shaded band starts.
 */
export interface ReadScales {
  xDomain: [number, number];
  limits: { value: number; drawnAt: number }[];
  bandStarts: number[];
}

export function readScales(page: Page, chartId: string): Promise<ReadScales> {
  return page.evaluate(`tailgateGeometry.readScales(${JSON.stringify(chartId)})`) as Promise<ReadScales>;
}

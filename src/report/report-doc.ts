/** One chart: a set of (x, y) series drawn as lines or steps, with optional vertical markers. */
export interface Chart {
  /** Stable id, written as `data-chart-id` (tests and browsers find charts by it). */
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  kind: 'line' | 'step';
  series: { name: string; points: [number, number][] }[];
  /** Logarithmic y axis (non-positive values are clamped to the smallest positive one). */
  yLog?: boolean;
  /** Vertical lines at x with a label, e.g. "stall starts". */
  markers?: { x: number; label: string }[];
  /** Shaded x windows drawn behind the series, e.g. a stalled worker's fault window. */
  bands?: { from: number; to: number; label: string }[];
  /** Dashed horizontal lines with a label, e.g. the limit a gate compared with (threshold x tolerance). */
  limits?: { y: number; label: string }[];
  /** Fixed x range; charts stacked in one section share one so their times line up. */
  xDomain?: [number, number];
  /** One small panel per series on shared scales (small multiples) instead of overlaid lines. */
  facets?: boolean;
}

/** A section of the report: any of text, a table and charts, in that order. */
export interface ReportSection {
  title: string;
  /** Plain text; blank lines separate paragraphs. */
  text?: string;
  table?: { columns: string[]; rows: (string | number)[][] };
  charts?: Chart[];
}

/** The whole report, rendered as one self-contained HTML file. */
export interface ReportDoc {
  title: string;
  subtitle?: string;
  /** Key facts shown under the title (seed, versions, target...). */
  meta?: Record<string, string>;
  sections: ReportSection[];
}

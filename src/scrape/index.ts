export type { Sample, MetricFamily, PrometheusPage } from './prometheus-text.js';
export { parsePrometheusText, parsePrometheus, parseGoFloat, formatGoFloat, formatPrometheusText, sumSamples } from './prometheus-text.js';
export type { ScrapeResult } from './scrape-once.js';
export { scrapeOnce } from './scrape-once.js';
export type { CollectorOptions, CollectorSeries, TargetSeries } from './collector.js';
export { Collector, pickDefault } from './collector.js';
export type { HostPressure } from './host-pressure.js';
export { readHostPressure } from './host-pressure.js';

export { writeAiperfExports, aiperfJson, aiperfCsv, aiperfJsonlLine, metricLabel, AIPERF_FILES, AIPERF_SCHEMA_VERSION } from './aiperf-exports.js';
export type { AiperfExportInput } from './aiperf-exports.js';
export { formatConsoleTable } from './console-table.js';
export { junitXml } from './junit.js';
export type { JunitCase, JunitSuite } from './junit.js';
export { renderHtmlReport } from './html-report.js';
export { lineChartSvg, niceTicks, tickLabel, SERIES_COLOURS } from './svg-chart.js';
export type { Chart, ReportDoc, ReportSection } from './report-doc.js';
export { escapeXml, formatNumber } from './escape.js';

export { formatProfileYaml, resolveProfile } from './profile-file.js';
export type { Level, LevelFigures, LevelServerMetrics } from './level.js';
export { expandRuns, readRun, levelOf } from './read-run.js';
export type { SimLevel } from './predict.js';
export { levelScenario, predictLevel, simLevelOf } from './predict.js';
export type { FitOptions, FitResult, FittedName, FittedParam } from './fit.js';
export { checkLevels, fitProfile } from './fit.js';
export type { CalibrationReport, LevelComparison, PredictLoad, PredictOptions } from './report.js';
export { COMPARED, calibrate, calibrationJson, calibrationReportDoc, formatCalibration, predictAt } from './report.js';

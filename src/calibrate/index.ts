export { formatProfileYaml, resolveProfile } from './profile-file.js';

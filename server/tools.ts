/** The server's view of env tool descriptions: generated in envs/core, where the registry lists them too. */
export { toolDescription, toolDescriptions } from '../envs/core/tool-descriptions.ts';

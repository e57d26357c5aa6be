/**
 * The trajectory dataset's name and version, written into every dataset's manifest and Arrow
 * schema. The Python SDK's writer and reader share them (generated into gymwire/_protocol.py by
 * `npm run gen:python`), so a dataset written by either SDK is read by the other.
 */
export const DATASET_FORMAT = 'gymwire.trajectories';
export const DATASET_VERSION = 1;

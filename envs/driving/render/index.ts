/**
 * The one scene renderer both driving envs use: pinhole camera rigs, the BEV semantic raster and
 * LiDAR ray casting, all reading the same {@link SemanticGrid} of the map.
 */
export { SemanticGrid, SEM } from './grid.ts';
export type { CameraSpec, RenderBox, RenderInput } from './camera.ts';
export { CameraRig, cameraRigBytes, CAMERA_BYTES_PER_PIXEL, navsimCameras, intrinsics, extrinsics, fillConvex } from './camera.ts';
export { renderBev, BEV_CHANNELS } from './bev.ts';
export type { BevOptions } from './bev.ts';
export { castLidar } from './lidar.ts';
export type { LidarOptions } from './lidar.ts';

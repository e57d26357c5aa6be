/**
 * The gymwire TypeScript SDK.
 *
 * @example
 * import { connect } from 'gymwire/client';
 * const client = await connect('ws://127.0.0.1:8765');
 * const env = await client.make('gymwire/CartPole-v1');
 */
export { connect, GymwireClient } from './client.ts';
export type { ClientEvent, ClientOptions } from './client.ts';
export { ProtocolError, SdkError, SdkErrorCode } from './errors.ts';
export { mergeInfos, RemoteEnv, RemoteVectorEnv } from './remote-env.ts';
export type { StepOutput, VectorStepOutput } from './remote-env.ts';
export { wsConnector } from './transport.ts';
export type { ClientTransport, Connector } from './transport.ts';
export { Tensor } from '../../protocol/tensor.ts';
export * as spaces from '../../protocol/spaces.ts';
export { WAYPOINT_CONTROLLERS, WaypointController } from '../../runtime/waypoint-control.ts';
export type { WaypointControl, WaypointControllerName } from '../../runtime/waypoint-control.ts';
export { sample } from '../../runtime/space-sample.ts';
export { Random } from '../../runtime/random.ts';

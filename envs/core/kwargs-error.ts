/**
 * The error for make kwargs a client got wrong, on its own so that modules the registry imports
 * (data-roots.ts) can extend it. The server answers it with ENV_ERR_INVALID_KWARGS.
 */
export class InvalidKwargsError extends Error {
  override readonly name: string = 'InvalidKwargsError';
  constructor(
    message: string,
    readonly issues: { path: string; message: string }[],
  ) {
    super(message);
  }
}

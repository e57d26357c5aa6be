/** Files the compiled code loads beside itself, copied into dist/ at the same relative place. */
export declare const ASSETS: readonly string[];

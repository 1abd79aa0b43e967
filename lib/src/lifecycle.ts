/**
 * The process's shutdown state, shared by everything it runs (one service per pod, or every service
 * in embedded mode). Once draining (SIGTERM), health checks report NOT_SERVING and the gateway's
 * `/readyz` says `draining`, while requests are still served until the listeners close.
 */
let draining = false;

export function startDraining(): void {
  draining = true;
}

export function isDraining(): boolean {
  return draining;
}

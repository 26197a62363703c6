export { AsyncQueue } from './async-queue.js';
export { ReceiveWindow, SendCredit } from './credit-window.js';
export { FairQueue } from './fair-queue.js';
export { nextTurn } from './next-turn.js';
export { Wakeup } from './wakeup.js';

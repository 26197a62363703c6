import { archiveGetContract, archivePutContract, archiveStatContract } from './docker-archive.js';
import { containerListContract, createContract, inspectContract, logsContract, removeContract, restartContract, startContract, stopContract } from './docker-containers.js';
import { execContract } from './docker-exec.js';
import { imageInspectContract, imageListContract, pullContract } from './docker-images.js';
import type { PlacedContract } from './placement.js';

/** Every Docker operation an agent serves (spec §12), each with where a fleet runs it: what a gateway offers. */
export const dockerContracts: readonly PlacedContract[] = [
  execContract,
  logsContract,
  containerListContract,
  inspectContract,
  createContract,
  startContract,
  stopContract,
  restartContract,
  removeContract,
  imageListContract,
  imageInspectContract,
  pullContract,
  archiveStatContract,
  archiveGetContract,
  archivePutContract,
];

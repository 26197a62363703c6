/** Go's os.FileMode type bits, as the engine's path stat carries them (docker/container/archive/stat's `mode`). */
const MODE_DIR = 2 ** 31;
const MODE_SYMLINK = 2 ** 27;
/** Every type bit: directory, symlink, device, named pipe, socket, character device, irregular. */
const TYPE_BITS = [MODE_DIR, MODE_SYMLINK, 2 ** 26, 2 ** 25, 2 ** 24, 2 ** 21, 2 ** 19];

const has = (mode: number, bit: number): boolean => Math.floor(mode / bit) % 2 === 1;

export const isDirectoryMode = (mode: number): boolean => has(mode, MODE_DIR);
export const isSymlinkMode = (mode: number): boolean => has(mode, MODE_SYMLINK);
/** No type bit: a regular file. */
export const isRegularMode = (mode: number): boolean => TYPE_BITS.every((bit) => !has(mode, bit));

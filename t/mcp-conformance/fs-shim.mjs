import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() {
	throw new Error('fs.globSync needs Node.js 22 (the server scenarios do not use it)');
}

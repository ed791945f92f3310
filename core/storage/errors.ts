export class StorageNotFoundError extends Error {
  readonly key: string;
  constructor(key: string) {
    super(`Storage object not found: ${key}`);
    this.name = 'StorageNotFoundError';
    this.key = key;
  }
}

# zlib 1.2
typedef unsigned long uLong;
typedef unsigned int uInt;
typedef unsigned char Bytef;
uLong crc32(uLong crc, const Bytef *buf, uInt len);
int compress2(Bytef *dest, uLong *destLen, const Bytef *source, uLong sourceLen, int level);
int uncompress(Bytef *dest, uLong *destLen, const Bytef *source, uLong sourceLen);

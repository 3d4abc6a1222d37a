#define LZ4_STATIC_LINKING_ONLY
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
static uint64_t sm(uint64_t *x){uint64_t z=(*x+=0x9e3779b97f4a7c15ull);z=(z^(z>>30))*0xbf58476d1ce4e5b9ull;z=(z^(z>>27))*0x94d049bb133111ebull;return z^(z>>31);}
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t N=64<<20; char*data=malloc(N);
  if(argc>1){FILE*f=fopen(argv[1],"rb");size_t r=fread(data,1,N,f);N=r&~4095ul;fclose(f);}
  else {uint64_t x=1;size_t i=0;while(i+1060<=N){ for(int k=0;k<16;k++)data[i+k]=(char)sm(&x); i+=20; /* key+varints */
     for(int k=0;k<512;k+=8){uint64_t w=sm(&x);memcpy(data+i+k,&w,8);} memcpy(data+i+512,data+i,512); i+=1024;} N=i&~4095ul;}
  char*out=malloc(LZ4_compressBound(4096)); void*st=malloc(LZ4_sizeofState());
  int accs[]={1,2,4,8,16};
  for(int a=0;a<5;a++) for(int fr=0;fr<2;fr++){
    double t=now(); size_t tot=0;
    for(int rep=0;rep<3;rep++) for(size_t o=0;o<N;o+=4096){
      int c= fr? LZ4_compress_fast_extState_fastReset(st,data+o,out,4096,LZ4_compressBound(4096),accs[a]) : LZ4_compress_fast_extState(st,data+o,out,4096,LZ4_compressBound(4096),accs[a]);
      tot+=c;}
    double dt=now()-t; printf("acc=%2d fastReset=%d  %.0f MB/s ratio %.3f\n",accs[a],fr,3.0*N/dt/1e6,(double)tot/(3.0*N));
  }
}

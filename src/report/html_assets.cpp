// Stylesheet and chart script of the HTML report. The script reads the JSON report embedded in
// <script id="ts-data">, draws each chart as inline SVG into its <div data-chart=...>, and marks
// <html data-charts-rendered="N">; any error sets <html data-js-error> (the Chromium test reads both).
#include "report/html_assets.h"

namespace ts::report {

const char* const kHtmlCss = R"CSS(
:root{--fg:#1d2330;--muted:#5f6b7a;--line:#e3e7ee;--bg:#f6f8fb;--card:#fff;--accent:#3056d3}
*{box-sizing:border-box}
body{margin:0;font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header{background:#182034;color:#fff;padding:18px 32px}
header h1{margin:0;font-size:18px;font-weight:600;letter-spacing:.2px}
header .sub{color:#aab4c8;font-size:12px;margin-top:2px}
main{max-width:1180px;margin:0 auto;padding:20px 32px 48px}
.verdict{background:var(--card);border-left:6px solid var(--accent);padding:16px 20px;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);margin-bottom:14px}
.verdict .label{font-size:11px;text-transform:uppercase;letter-spacing:1px;color:var(--muted)}
.verdict .text{font-size:19px;font-weight:600;margin-top:4px}
.verdict .scenario{color:var(--muted);margin-top:8px}
.verdict.sev-critical,.verdict.sev-high{border-left-color:#d32f2f}.verdict.sev-medium{border-left-color:#f29900}.verdict.sev-info{border-left-color:#2e7d32}
h2{font-size:16px;margin:28px 0 10px;font-weight:650}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:14px}
@media(max-width:900px){.grid{grid-template-columns:1fr}}
.card{background:var(--card);border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:14px 16px}
.card h3{margin:0 0 6px;font-size:13px;font-weight:600;color:var(--muted);text-transform:uppercase;letter-spacing:.6px}
.card.wide{grid-column:1/-1}
.finding{background:var(--card);border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.08);padding:14px 18px;margin-bottom:12px;border-left:5px solid #9aa5b1}
.finding.sev-critical{border-left-color:#b71c1c}.finding.sev-high{border-left-color:#d32f2f}.finding.sev-medium{border-left-color:#f29900}.finding.sev-low{border-left-color:#1e88e5}.finding.sev-info{border-left-color:#2e7d32}
.finding .top{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.badge{font-size:11px;font-weight:700;text-transform:uppercase;padding:2px 8px;border-radius:10px;color:#fff;background:#9aa5b1}
.badge.sev-critical{background:#b71c1c}.badge.sev-high{background:#d32f2f}.badge.sev-medium{background:#f29900}.badge.sev-low{background:#1e88e5}.badge.sev-info{background:#2e7d32}
.fid{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-weight:600}
.meta{color:var(--muted);font-size:12px}
.ftitle{font-weight:600;font-size:15px;margin:6px 0 2px}
.gain{color:#1b5e20;font-weight:600}
.chips{margin:8px 0;display:flex;flex-wrap:wrap;gap:6px}
.chip{background:#eef2f8;border-radius:4px;padding:1px 8px;font-size:12px}
.chip b{font-weight:600}
.fix{margin-top:6px}
.account{display:flex;height:28px;border-radius:4px;overflow:hidden;margin:6px 0}.account .acc{color:#fff;font-size:12px;line-height:28px;text-align:center;overflow:hidden;white-space:nowrap}
.acc-before_first_step_s{background:#8c8c8c}.acc-compile_s{background:#b05cc8}.acc-train_steps_s{background:#2e8b57}.acc-data_wait_s{background:#d9a400}.acc-eval_s{background:#3c78d8}.acc-checkpoint_s{background:#c0392b}.acc-profiler_s{background:#e0e0e0}.acc-other_s{background:#bbb}
.legend span{margin-right:14px;font-size:13px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;border-radius:2px}
.site{margin-top:6px}.site .at{font-weight:600;color:#555}.site .loc{font-weight:600}
pre.siteline{margin:2px 0 4px 0;padding:4px 8px;color:#222;border-left:3px solid #d9a400;background:#fffbea}pre.siteline .lno{color:#999;margin-right:6px}
pre{background:#0f1626;color:#dce3f0;padding:10px 12px;border-radius:6px;overflow:auto;font:12.5px/1.45 ui-monospace,"DejaVu Sans Mono",monospace;margin:8px 0 0}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid var(--line)}
th{color:var(--muted);font-weight:600;font-size:12px}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px;word-break:break-all}
.chart svg{width:100%;height:auto;display:block}
.legend{display:flex;flex-wrap:wrap;gap:12px;font-size:12px;color:var(--muted);margin-top:4px}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.empty{color:var(--muted);font-style:italic;padding:24px 0;text-align:center}
[data-tabs]{display:flex;flex-wrap:wrap;gap:4px;margin:8px 0 12px}
[data-tab]{font:inherit;font-size:13px;border:1px solid var(--line);background:var(--card);border-radius:6px;padding:4px 12px;cursor:pointer}
[data-tab][aria-selected=true]{background:var(--accent);border-color:var(--accent);color:#fff}
.panel h3.path{font:12px ui-monospace,"DejaVu Sans Mono",monospace;color:var(--muted);text-transform:none;letter-spacing:0;margin:0 0 10px}
footer{color:var(--muted);font-size:12px;text-align:center;margin-top:32px}
)CSS";

const char* const kHtmlErrorHook = R"JS(
window.onerror=function(msg,src,line){document.documentElement.setAttribute('data-js-error',String(msg)+' @'+line);};
)JS";

const char* const kHtmlChartsJs = R"JS(
(function(){
'use strict';
var R=JSON.parse(document.getElementById('ts-data').textContent);
var NS='http://www.w3.org/2000/svg';
var CLS=['kernel','memcpy','memset','communication','runtime','dataloader','cpu_exec','other'];
var LABEL={kernel:'Kernel',memcpy:'Memcpy',memset:'Memset',communication:'Communication',runtime:'Runtime',dataloader:'DataLoader',cpu_exec:'CPU exec',other:'Other'};
var COLOR={kernel:'#2e7d32',memcpy:'#1e88e5',memset:'#8e24aa',communication:'#fb8c00',runtime:'#e53935',dataloader:'#d81b60',cpu_exec:'#fdd835',other:'#b0bec5'};
var rendered=0;
function svg(w,h){var s=document.createElementNS(NS,'svg');s.setAttribute('viewBox','0 0 '+w+' '+h);s.setAttribute('role','img');return s;}
function el(tag,attrs,parent,text){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(text!==undefined)e.textContent=text;if(parent)parent.appendChild(e);return e;}
function tip(e,text){el('title',{},e,text);}
function ms(v){if(!v)return '0';if(v>=1000)return (v/1000).toFixed(2)+' s';if(v>=1)return v.toFixed(v>=100?0:1)+' ms';return (v*1000).toFixed(0)+' µs';}
function bytes(b){if(!b)return '0';var u=['B','KiB','MiB','GiB','TiB'],i=0;b=Math.abs(b);while(b>=1024&&i<4){b/=1024;i++;}return b.toFixed(i?1:0)+' '+u[i];}
function niceMax(v){if(!(v>0))return 1;var p=Math.pow(10,Math.floor(Math.log10(v))),n=v/p;return (n<=1?1:n<=2?2:n<=2.5?2.5:n<=5?5:10)*p;}
function axes(s,x0,y0,w,h,max,fmt,ticks){ticks=ticks||4;for(var i=0;i<=ticks;i++){var y=y0+h-h*i/ticks;el('line',{x1:x0,x2:x0+w,y1:y,y2:y,stroke:'#e3e7ee'},s);el('text',{x:x0-6,y:y+4,'text-anchor':'end','font-size':11,fill:'#5f6b7a'},s,fmt(max*i/ticks));}}
function legend(div,items){var l=document.createElement('div');l.className='legend';items.forEach(function(it){var s=document.createElement('span');var i=document.createElement('i');i.style.background=it[1];s.appendChild(i);s.appendChild(document.createTextNode(it[0]));l.appendChild(s);});div.appendChild(l);}
function empty(div,text){var p=document.createElement('div');p.className='empty';p.textContent=text;div.appendChild(p);}
function done(div,s){div.appendChild(s);div.setAttribute('data-rendered','1');rendered++;}
// Each chart div names its trace (data-trace="i"): a report of several traces draws every trace's charts.
function traceOf(div){var i=div.getAttribute('data-trace');return (i!==null&&R.traces&&R.traces[+i])||null;}
// The agent's memory per step: the run section's step table (CUDA allocated; without CUDA the C
// heap in use, or the RSS), the series the memory-growth rule read (summary.mem_source).
function agentMemory(){
  var A=R.run&&R.run.agent,tb=A&&A.step_table;if(!tb||!tb.rows||!tb.rows.length)return null;
  var src=A.summary&&A.summary.mem_source,name={rss:'rss',heap:'heap'}[src]||'mem_allocated',col=tb.columns.indexOf(name);if(col<0)return null;
  var v=tb.rows.map(function(r){return r[col];}).filter(function(x){return typeof x==='number'&&x>=0;});
  return v.length?{vals:v,label:({rss:'RSS',heap:'C heap in use'}[src]||'allocated')+' per step (agent)'}:null;
}

function stepBars(div,T){
  var steps=T?T.steps.items:[];
  if(!steps.length){empty(div,'No steps in the trace.');return;}
  var W=900,H=240,x0=58,y0=12,w=W-x0-12,h=H-y0-34,s=svg(W,H);
  var max=niceMax(Math.max.apply(null,steps.map(function(x){return x.duration_ms;})));
  axes(s,x0,y0,w,h,max,ms);
  var bw=w/steps.length,gap=Math.min(6,bw*0.2);
  steps.forEach(function(st,i){
    var y=y0+h,x=x0+i*bw+gap/2;
    CLS.forEach(function(c){var v=st.breakdown_ms[c]||0;if(v<=0)return;var hh=h*v/max;y-=hh;
      var r=el('rect',{x:x,y:y,width:Math.max(1,bw-gap),height:hh,fill:COLOR[c]},s);tip(r,'step '+st.number+' · '+LABEL[c]+' '+ms(v)+' ('+(100*v/st.duration_ms).toFixed(1)+'%)');});
    if(steps.length<=40||i%Math.ceil(steps.length/20)===0)el('text',{x:x+(bw-gap)/2,y:y0+h+14,'text-anchor':'middle','font-size':10,fill:'#5f6b7a'},s,String(st.number));
  });
  el('text',{x:x0+w/2,y:H-4,'text-anchor':'middle','font-size':11,fill:'#5f6b7a'},s,'step');
  done(div,s);legend(div,CLS.filter(function(c){return T.step_breakdown_ms[c]>0;}).map(function(c){return [LABEL[c]+' '+T.step_breakdown_pct[c].toFixed(1)+'%',COLOR[c]];}));
}

function breakdownBar(div,T){
  if(!T||!(T.steps.total_ms>0)){empty(div,'No step time.');return;}
  var W=900,H=46,s=svg(W,H),x=0;
  CLS.forEach(function(c){var p=T.step_breakdown_pct[c]||0;if(p<=0)return;var ww=W*p/100;
    var r=el('rect',{x:x,y:4,width:ww,height:28,fill:COLOR[c]},s);tip(r,LABEL[c]+' '+p.toFixed(1)+'% · '+ms(T.step_breakdown_ms[c]));
    if(ww>70)el('text',{x:x+6,y:23,'font-size':12,fill:c==='cpu_exec'?'#333':'#fff'},s,LABEL[c]+' '+p.toFixed(0)+'%');x+=ww;});
  done(div,s);
}

function utilChart(div,T){
  // data-source="trace": the trace's own GPU busy per step even when samples exist (one per rank).
  var S=R.samples,series=div.getAttribute('data-source')!=='trace'&&S&&S.series&&S.series.t_s&&S.series.t_s.length>1?S.series:null;
  var W=900,H=250,x0=44,y0=10,w=W-x0-14,h=H-y0-36,s=svg(W,H),tmax,lines=[],bounds=[],xlabel;
  if(series){
    tmax=series.t_s[series.t_s.length-1]-series.t_s[0];
    var t0=series.t_s[0];
    if(series.gpu_util_pct.length)lines.push(['GPU utilisation','#2e7d32',series.t_s.map(function(t,i){return [t-t0,series.gpu_util_pct[i]];})]);
    if(series.cpu_util_pct.length)lines.push(['CPU utilisation','#1e88e5',series.t_s.map(function(t,i){return [t-t0,series.cpu_util_pct[i]];})]);
    bounds=(S.step_start_s||[]).map(function(t){return t-t0;});xlabel='time (s)';
  }else if(T&&T.gpu.present&&T.steps.items.length){
    var it=T.steps.items,pts=[];
    it.forEach(function(st){pts.push([st.start_ms/1000,st.gpu_busy_pct]);pts.push([(st.start_ms+st.duration_ms)/1000,st.gpu_busy_pct]);bounds.push(st.start_ms/1000);});
    tmax=(it[it.length-1].start_ms+it[it.length-1].duration_ms)/1000;
    lines.push(['GPU busy per step (trace)','#2e7d32',pts]);xlabel='time in the trace (s)';
  }else{empty(div,'No utilisation over time: no samples and no GPU steps in the trace.');return;}
  if(!(tmax>0))tmax=1;
  axes(s,x0,y0,w,h,100,function(v){return v.toFixed(0)+'%';});
  bounds.forEach(function(b){var x=x0+w*b/tmax;el('line',{x1:x,x2:x,y1:y0,y2:y0+h,stroke:'#9aa5b1','stroke-dasharray':'2 3','stroke-width':1},s);});
  lines.forEach(function(L){var d=L[2].map(function(p,i){return (i?'L':'M')+(x0+w*p[0]/tmax).toFixed(1)+' '+(y0+h-h*Math.max(0,Math.min(100,p[1]))/100).toFixed(1);}).join(' ');
    var path=el('path',{d:d,fill:'none',stroke:L[1],'stroke-width':2,'stroke-linejoin':'round'},s);tip(path,L[0]);});
  for(var i=0;i<=4;i++){var tv=tmax*i/4;el('text',{x:x0+w*i/4,y:y0+h+14,'text-anchor':'middle','font-size':10,fill:'#5f6b7a'},s,tv.toFixed(tmax<10?2:0));}
  el('text',{x:x0+w/2,y:H-4,'text-anchor':'middle','font-size':11,fill:'#5f6b7a'},s,xlabel);
  done(div,s);legend(div,lines.map(function(L){return [L[0],L[1]];}).concat(bounds.length?[['step boundary','#9aa5b1']]:[]));
}

function memoryChart(div,T){
  var vals=[],label,am;
  if(T&&T.memory.present&&T.memory.allocated_at_step_end_bytes.length){vals=T.memory.allocated_at_step_end_bytes;label='allocated at step end';}
  else if((am=agentMemory())){vals=am.vals;label=am.label;}
  if(!vals.length){empty(div,'No memory events (record with profile_memory=True).');return;}
  var lo=Math.min.apply(null,vals),hi=Math.max.apply(null,vals);
  if(lo===0&&hi===0){empty(div,'Allocated memory at step ends did not change (or the trace has only relative totals).');return;}
  var W=900,H=200,x0=70,y0=10,w=W-x0-14,h=H-y0-34,s=svg(W,H);
  // Relative totals (no "Total Allocated" in the trace) can go below zero: the axis spans both.
  var base=lo<0?-niceMax(-lo*1.1):0,max=hi>0?niceMax(hi*1.1):0,span=(max-base)||1;
  for(var t=0;t<=4;t++){var yv=base+span*t/4,yy=y0+h-h*t/4;el('line',{x1:x0,x2:x0+w,y1:yy,y2:yy,stroke:'#e3e7ee'},s);el('text',{x:x0-6,y:yy+4,'text-anchor':'end','font-size':11,fill:'#5f6b7a'},s,(yv<0?'-':'')+bytes(yv));}
  function Y(v){return y0+h-h*(v-base)/span;}
  var n=vals.length,dx=n>1?w/(n-1):0;
  var d=vals.map(function(v,i){return (i?'L':'M')+(x0+(n>1?i*dx:w/2)).toFixed(1)+' '+Y(v).toFixed(1);}).join(' ');
  el('path',{d:d,fill:'none',stroke:'#8e24aa','stroke-width':2},s);
  vals.forEach(function(v,i){var c=el('circle',{cx:x0+(n>1?i*dx:w/2),cy:Y(v),r:3.5,fill:'#8e24aa'},s);tip(c,'step '+i+': '+(v<0?'-':'')+bytes(v));});
  el('text',{x:x0+w/2,y:H-4,'text-anchor':'middle','font-size':11,fill:'#5f6b7a'},s,'step ('+label+'; range '+bytes(lo)+' – '+bytes(hi)+')');
  done(div,s);
}

function kernelChart(div,T){
  var top=T?T.kernels.top:[];
  if(!top.length){empty(div,'No GPU kernels.');return;}
  var rows=top.slice(0,10),W=900,rh=24,H=rows.length*rh+10,lab=430,s=svg(W,H),bw=W-lab-110;
  var max=Math.max.apply(null,rows.map(function(r){return r.share_pct;}));
  rows.forEach(function(r,i){var y=5+i*rh,name=r.name.length>62?r.name.slice(0,60)+'…':r.name;
    var t=el('text',{x:lab-8,y:y+16,'text-anchor':'end','font-size':11.5,fill:'#1d2330','font-family':'ui-monospace,DejaVu Sans Mono,monospace'},s,name);tip(t,r.name);
    var rect=el('rect',{x:lab,y:y+4,width:Math.max(1,bw*r.share_pct/max),height:rh-10,rx:2,fill:'#3056d3'},s);tip(rect,r.name+'\n'+r.count+' calls · '+ms(r.total_ms));
    el('text',{x:lab+Math.max(1,bw*r.share_pct/max)+6,y:y+16,'font-size':11,fill:'#5f6b7a'},s,r.share_pct.toFixed(1)+'% · '+ms(r.total_ms));});
  done(div,s);
}

function rankChart(div){
  var rk=R.ranks||[];
  if(rk.length<2){div.parentNode.style.display='none';return;}
  var W=900,H=200,x0=58,y0=10,w=W-x0-12,h=H-y0-34,s=svg(W,H);
  var max=niceMax(Math.max.apply(null,rk.map(function(r){return r.median_step_ms;})));
  axes(s,x0,y0,w,h,max,ms);
  var bw=w/rk.length;
  rk.forEach(function(r,i){var hh=h*r.median_step_ms/max;var b=el('rect',{x:x0+i*bw+bw*0.15,y:y0+h-hh,width:bw*0.7,height:hh,fill:r.straggler?'#d32f2f':'#3056d3'},s);
    tip(b,'rank '+r.rank+': median step '+ms(r.median_step_ms)+(r.straggler?' (straggler)':''));
    el('text',{x:x0+i*bw+bw/2,y:y0+h+14,'text-anchor':'middle','font-size':10,fill:'#5f6b7a'},s,String(r.rank));});
  el('text',{x:x0+w/2,y:H-4,'text-anchor':'middle','font-size':11,fill:'#5f6b7a'},s,'rank (median step time)');
  done(div,s);
}

// GPU timeline per step (traces[i].timeline): per bin the GPU's busy share (green, from the bottom)
// and, above it, the idle cause that took most of the bin's idle time (traces[i].gpu.idle_attribution).
var CAUSE={sync:['Blocking sync','#d32f2f'],launch:['Launch overhead','#fb8c00'],data_loading:['Data loading','#d81b60'],
  optimizer:['Optimizer','#6d4c41'],memory:['Memory management','#8e24aa'],setup:['Set-up / compilation','#5e35b1'],
  host_compute:['Host compute','#f9a825'],stream_wait:['Waiting on a stream','#00897b'],collective:['Collective','#1e88e5'],
  gpu_overhead:['GPU overhead','#90a4ae'],untraced:['GPU work missing from the trace','#cfd8dc'],unattributed:['Nothing recorded','#b0bec5']};
var OUTSIDE=['Outside the GPU\'s active span','#e0e4ea'],BUSY='#2e7d32';
function timelineChart(div,T){
  var TL=T&&T.timeline;
  if(!TL||!TL.steps||!TL.steps.length){empty(div,'No GPU timeline: no GPU events in the steps.');return;}
  var E=(T.gpu&&T.gpu.idle_attribution)||[],rows=TL.steps,W=900,rh=26,x0=110,w=W-x0-8,H=rows.length*rh+40,s=svg(W,H),seen={};
  function who(e){if(e===-2)return OUTSIDE;var en=E[e],c=en&&CAUSE[en.cause];return c||CAUSE.unattributed;}
  function what(e){if(e===-2)return OUTSIDE[0]+' (no GPU work yet, or none left)';var en=E[e];if(!en)return 'idle';
    var t=(CAUSE[en.cause]||[en.cause])[0]+': '+(en.host_event||'?');if(en.op&&en.op!==en.host_event)t+=' in '+en.op;if(en.annotation)t+=' · '+en.annotation;if(en.frame)t+=' · '+en.frame;return t;}
  rows.forEach(function(st,i){
    var y=4+i*rh,hh=rh-6,b0=0,per=st.duration_ms/TL.bins;
    var lab=el('text',{x:x0-8,y:y+hh/2+4,'text-anchor':'end','font-size':11,fill:'#1d2330'},s,'step '+st.number+' · '+ms(st.duration_ms));
    tip(lab,'step '+st.number+': '+ms(st.duration_ms));
    st.runs.forEach(function(r){
      var n=r[0],busy=r[1],e=r[2],x=x0+w*b0/TL.bins,ww=Math.max(0.5,w*n/TL.bins),t0=b0*per,t1=(b0+n)*per,g=el('g',{},s);
      var idleH=hh*(100-busy)/100;
      if(busy>0)el('rect',{x:x,y:y+idleH,width:ww,height:hh-idleH,fill:BUSY},g);
      if(busy<100){var c=e===-1?OUTSIDE:who(e);el('rect',{x:x,y:y,width:ww,height:idleH,fill:c[1]},g);if(e!==-1)seen[c[0]]=c[1];}
      tip(g,'step '+st.number+' · '+ms(t0)+' – '+ms(t1)+' into the step\nGPU busy '+busy+'%'+(busy<100&&e!==-1?'\nidle: '+what(e):''));
      b0+=n;});
  });
  // Each row spans its own step (durations differ), so the axis is the share of the step; the
  // hover gives the milliseconds.
  var ay=4+rows.length*rh;
  for(var q=0;q<=4;q++){var ax=x0+w*q/4;
    el('line',{x1:ax,x2:ax,y1:ay-2,y2:ay+3,stroke:'#5f6b7a'},s);
    el('text',{x:ax,y:ay+15,'text-anchor':q===0?'start':q===4?'end':'middle','font-size':10,fill:'#5f6b7a'},s,(25*q)+'%');}
  el('line',{x1:x0,x2:x0+w,y1:ay,y2:ay,stroke:'#5f6b7a'},s);
  el('text',{x:x0+w/2,y:H-4,'text-anchor':'middle','font-size':11,fill:'#5f6b7a'},s,'share of the step\'s time (each row: one step; '+rows.length+' of '+TL.steps_total+' steps)');
  done(div,s);
  legend(div,[['GPU busy',BUSY]].concat(Object.keys(seen).map(function(k){return [k,seen[k]];})));
}

var fns={'timeline':timelineChart,'step-bars':stepBars,'breakdown':breakdownBar,'util':utilChart,'memory':memoryChart,'kernels':kernelChart,'ranks':rankChart};
Array.prototype.forEach.call(document.querySelectorAll('[data-chart]'),function(div){fns[div.getAttribute('data-chart')](div,traceOf(div));});
// Tabs of a several-trace report: every panel is drawn up front; a tab only shows its panel.
// The address's #trace-N opens that trace, so a link can point at one rank.
var tabs=document.querySelectorAll('[data-tab]');
function show(n){Array.prototype.forEach.call(tabs,function(b){var on=b.getAttribute('data-tab')===String(n);b.setAttribute('aria-selected',on?'true':'false');
  document.getElementById('trace-'+b.getAttribute('data-tab')).hidden=!on;});}
Array.prototype.forEach.call(tabs,function(b){b.addEventListener('click',function(){show(b.getAttribute('data-tab'));history.replaceState(null,'','#trace-'+b.getAttribute('data-tab'));});});
if(tabs.length){var m=/^#trace-(\d+)$/.exec(location.hash);show(m&&document.getElementById('trace-'+m[1])?m[1]:0);}
document.documentElement.setAttribute('data-charts-rendered',String(rendered));
})();
)JS";

}  // namespace ts::report
